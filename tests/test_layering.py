"""The layers stay apart: core imports none of the others, adapters and the harness bridge
import core but not each other, and only the command line (`c2a/`) imports everything.

Every import counts, wherever it stands (a function body, an `if TYPE_CHECKING:` block), and
only `c2a/` may build a `SystemClock`: library code takes the clock it is given."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "adapters", "harness_bridge", "c2a")

# What each package may import of the project's packages (its own included).
ALLOWED = {
    "core": {"core"},
    "adapters": {"core", "adapters"},
    "harness_bridge": {"core", "harness_bridge"},
    "c2a": set(PACKAGES),
}


def modules(package: str) -> dict[str, ast.Module]:
    return {
        str(path.relative_to(ROOT)): ast.parse(path.read_text())
        for path in sorted((ROOT / package).rglob("*.py"))
    }


def imported(tree: ast.Module) -> set[str]:
    """The top-level packages a module imports, relative imports aside (they stay inside)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.split(".")[0])
    return names


def violations(package: str, trees: dict[str, ast.Module]) -> dict[str, set[str]]:
    forbidden = set(PACKAGES) - ALLOWED[package]
    found = {module: imported(tree) & forbidden for module, tree in trees.items()}
    return {module: names for module, names in found.items() if names}


@pytest.mark.parametrize("package", PACKAGES)
def test_each_package_imports_only_the_layers_below_it(package: str) -> None:
    assert violations(package, modules(package)) == {}


def test_the_check_sees_imports_in_function_bodies_and_type_checking_blocks() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from harness_bridge.rpc import RpcError\n"
        "def f():\n    import adapters.slack.send\n"
        "from . import sibling\n"
    )
    found = violations("core", {"core/x.py": ast.parse(source)})
    assert found == {"core/x.py": {"adapters", "harness_bridge"}}
    assert violations("adapters", {"adapters/x.py": ast.parse(source)}) == {
        "adapters/x.py": {"harness_bridge"}
    }


def test_only_the_command_line_builds_a_system_clock() -> None:
    builders = [
        module
        for package in PACKAGES
        if package != "c2a"
        for module, tree in modules(package).items()
        if module != "core/clock.py"
        and any(
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name | ast.Attribute)
            and (node.func.id if isinstance(node.func, ast.Name) else node.func.attr)
            == "SystemClock"
            for node in ast.walk(tree)
        )
    ]
    assert builders == []


def test_every_module_opens_with_a_docstring() -> None:
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            assert ast.get_docstring(ast.parse(path.read_text())), path


LONGEST = 400


def test_a_module_over_400_lines_says_why() -> None:
    """A long module is a sign it owns too much: one over `LONGEST` lines says in its docstring
    why it stays whole (the words "400 lines")."""

    def says_why(text: str) -> bool:
        docstring = ast.get_docstring(ast.parse(text)) or ""
        return "400 lines" in " ".join(docstring.split())

    sources = {
        str(path.relative_to(ROOT)): path.read_text()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
    }
    unexplained = [
        name
        for name, text in sources.items()
        if len(text.splitlines()) > LONGEST and not says_why(text)
    ]
    assert unexplained == []
