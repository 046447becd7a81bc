"""Backends are found by name, and their settings errors name the manifest key."""

from __future__ import annotations

import pytest
from world import harness_context, scenario

from core.engine import Engine
from core.errors import ManifestError
from core.sqlite_store import SQLiteStore
from harness_bridge.backends.registry import available, build
from harness_bridge.backends.stdio import StdioHarness
from harness_bridge.delivery import DELIVERY_WINDOW
from harness_bridge.runtime import InProcessHarness
from harness_bridge.tools import ChatTools


def test_the_built_in_backends_are_installed_entry_points() -> None:
    assert {"openai", "stdio"} <= set(available())


def test_a_backend_is_built_by_name_from_its_settings() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        stdio = build(
            harness_context(engine, "lead"), {"backend": "stdio", "command": ["python3", "h.py"]}
        )
        assert isinstance(stdio, StdioHarness) and stdio.command == ["python3", "h.py"]
        builtin = build(
            harness_context(engine, "lead"),
            {"backend": "openai", "base_url": "http://127.0.0.1:1/v1", "model": "m"},
        )
        assert isinstance(builtin, InProcessHarness)
        await builtin.stop()

    scenario(test)


def test_bad_settings_and_unknown_backends_name_the_key() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        with pytest.raises(ManifestError, match=r"agents\.lead\.harness\.command"):
            build(harness_context(engine, "lead"), {"backend": "stdio"})
        with pytest.raises(ManifestError, match=r"agents\.lead\.harness\.base_url"):
            build(
                harness_context(engine, "lead"),
                {"backend": "openai", "base_url": "ftp://x", "model": "m"},
            )
        with pytest.raises(ManifestError, match="unknown backend 'carrier-pigeon'"):
            build(harness_context(engine, "lead"), {"backend": "carrier-pigeon"})

    scenario(test)


def test_a_stdio_harness_takes_its_delivery_window_from_its_settings() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        context = harness_context(engine, "lead")
        default = build(context, {"backend": "stdio", "command": ["h"]})
        assert isinstance(default, StdioHarness) and default.window == DELIVERY_WINDOW == 32
        narrow = build(context, {"backend": "stdio", "command": ["h"], "deliveries_in_flight": 2})
        assert isinstance(narrow, StdioHarness) and narrow.window == 2
        with pytest.raises(ManifestError, match=r"agents\.lead\.harness\.deliveries_in_flight"):
            build(context, {"backend": "stdio", "command": ["h"], "deliveries_in_flight": 0})

    scenario(test)
