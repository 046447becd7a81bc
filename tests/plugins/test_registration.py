"""The built-in adapters and backends are registered by entry point in pyproject.toml, and the
built-in adapters' table in `c2a.platforms` says the same."""

from __future__ import annotations

import tomllib
from importlib.metadata import EntryPoint
from pathlib import Path

from c2a.platforms import BUILTIN, installed
from core.platform import PLATFORM_GROUP, Platform

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def entry_points(group: str) -> dict[str, str]:
    project = tomllib.loads(PYPROJECT.read_text())["project"]
    return dict(project["entry-points"][group])


def test_pyproject_registers_exactly_the_built_in_adapters() -> None:
    assert entry_points(PLATFORM_GROUP) == dict(BUILTIN)


def test_each_adapter_entry_point_is_a_platform_of_its_own_name() -> None:
    for name, value in entry_points(PLATFORM_GROUP).items():
        platform = EntryPoint(name, value, PLATFORM_GROUP).load()
        assert isinstance(platform, Platform)
        assert platform.name == name
        assert platform.connect is not None


def test_each_backend_entry_point_loads() -> None:
    for name, value in entry_points("c2a.backends").items():
        assert callable(EntryPoint(name, value, "c2a.backends").load())


def test_the_built_in_platforms_come_in_their_table_order() -> None:
    assert list(installed())[: len(BUILTIN)] == list(BUILTIN)
