"""The bridge speaks to core through its ports only: no module in `harness_bridge/` imports the
engine (or builds the port on it: that is the composition root's), and none names a platform;
what a platform can do reaches it as a capability (`Platform.streams_drafts`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BRIDGE = ROOT / "harness_bridge"
ENGINE_MODULES = {"core.engine", "core.engine_port"}
PLATFORM_WORDS = re.compile(r"slack|discord|webchat", re.IGNORECASE)


def sources() -> dict[str, str]:
    return {str(p.relative_to(ROOT)): p.read_text() for p in sorted(BRIDGE.rglob("*.py"))}


def imported_modules(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_no_bridge_module_imports_the_engine() -> None:
    found = {
        module: imported_modules(source) & ENGINE_MODULES for module, source in sources().items()
    }
    assert {module: names for module, names in found.items() if names} == {}


def test_the_check_sees_the_engine_however_it_is_imported() -> None:
    assert imported_modules("from core import engine") >= {"core.engine"}
    assert imported_modules("def f():\n    import core.engine_port\n") == {"core.engine_port"}


def test_no_bridge_module_names_a_platform() -> None:
    named = {
        module: sorted({m.lower() for m in PLATFORM_WORDS.findall(source)})
        for module, source in sources().items()
    }
    assert {module: words for module, words in named.items() if words} == {}
