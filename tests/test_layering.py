"""The layers stay apart: core imports neither adapters nor the harness bridge nor the CLI."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def imported(package: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in (ROOT / package).rglob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
        found[str(path.relative_to(ROOT))] = names
    return found


def test_core_imports_no_adapter_bridge_or_cli() -> None:
    for module, names in imported("core").items():
        assert not names & {"adapters", "harness_bridge", "c2a"}, module


def test_adapters_import_neither_the_bridge_nor_the_cli() -> None:
    for module, names in imported("adapters").items():
        assert not names & {"harness_bridge", "c2a"}, module


def test_every_module_opens_with_a_docstring() -> None:
    for package in ("core", "adapters", "harness_bridge", "c2a"):
        for path in (ROOT / package).rglob("*.py"):
            assert ast.get_docstring(ast.parse(path.read_text())), path
