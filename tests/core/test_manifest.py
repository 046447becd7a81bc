"""Validating a parsed manifest: the harness backend named must be installed, and every
problem is a line naming the file and key path, whatever the keys hold."""

from __future__ import annotations

from typing import Any

import pytest

from c2a.platforms import installed
from core.errors import ManifestError
from core.manifest import Workspace, parse_manifest


def manifest(**agent: Any) -> dict[str, Any]:
    return {"version": 1, "workspace": "w", "agents": {"a": agent}}


def test_an_agent_whose_backend_is_not_installed_is_refused_naming_the_installed_ones() -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(
            manifest(harness={"backend": "nope"}),
            "m.yaml",
            backends=("stdio", "openai"),
            platforms=installed(),
        )
    assert str(caught.value) == (
        "m.yaml: agents.a.harness.backend: unknown backend 'nope'; installed: openai, stdio"
    )


def test_with_no_backend_installed_the_error_says_none() -> None:
    with pytest.raises(ManifestError, match="installed: none"):
        parse_manifest(
            manifest(harness={"backend": "openai"}), "m.yaml", backends=(), platforms=installed()
        )


def test_an_installed_backend_passes_and_without_names_none_is_checked() -> None:
    data = manifest(harness={"backend": "openai", "model": "m"})
    assert (
        parse_manifest(data, "m.yaml", backends=["openai"], platforms=installed())
        .agents["a"]
        .harness
    )
    assert (
        parse_manifest(manifest(harness={"backend": "anything"}), "m.yaml", platforms=installed())
        .agents["a"]
        .harness
    )


@pytest.mark.parametrize("data", [None, [], "version: 1", 1])
def test_a_manifest_that_is_not_a_mapping_is_refused(data: object) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(data, "m.yaml", platforms=installed())
    assert str(caught.value) == "m.yaml: a manifest must be a mapping of keys"


def test_a_hostile_unknown_key_is_escaped_and_cut_in_the_message() -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(
            manifest(**{"\x1b[2Jsl\nak" + "x" * 100: {}}), "m.yaml", platforms=installed()
        )
    message = str(caught.value)
    assert "\n" not in message and "\x1b" not in message
    assert message == f"m.yaml: agents.a.'\\x1b[2Jsl\\nak{'x' * 31}...': unknown key"


def test_an_agent_is_found_as_people_name_it() -> None:
    """By its id or a short name, in any case, with or without `@` (the `/c2a` commands)."""
    data = {
        "version": 1,
        "workspace": "w",
        "agents": {"lead": {"lead": True}, "worker-1": {"names": ["Worker1", "w1"]}},
    }
    workspace = Workspace.from_manifest(parse_manifest(data, "m.yaml"))
    named = {word: workspace.agent_named(word) for word in ("@lead", "LEAD", "worker1", "@W1")}
    assert named == {"@lead": "lead", "LEAD": "lead", "worker1": "worker-1", "@W1": "worker-1"}
    assert workspace.agent_named("worker") is None
