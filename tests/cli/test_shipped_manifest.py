"""The manifest `make run` starts, as a person first meets it in the web chat: an agent is
addressed by its name as people type it (`worker-1, …`), not only by an @-mention."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from adapters.webchat.normalise import normalise
from c2a.platforms import installed
from core.clock import VirtualClock, parse_time
from core.decision import Directedness, Policy
from core.engine import Engine
from core.manifest import Workspace, load_manifest
from core.sqlite_store import SQLiteStore

SHIPPED = Path(__file__).resolve().parents[2] / "manifests" / "workspaces" / "local.yaml"
AT = "2026-01-01T00:00:10.000001Z"


def decided(text: str) -> dict[str, tuple[Directedness, Policy]]:
    """What each agent of the shipped workspace is told of `text` posted in #general."""
    platforms = installed()
    workspace = Workspace.from_manifest(load_manifest(SHIPPED, platforms=platforms), platforms)

    async def go() -> dict[str, tuple[Directedness, Policy]]:
        store = SQLiteStore(":memory:")
        await store.open()
        engine = Engine(workspace, store, VirtualClock(parse_time(AT)))
        payload = {
            "type": "message",
            "workspace": "local",
            "id": "1",
            "channel": "general",
            "thread": None,
            "user": "ben",
            "ts": AT,
            "text": text,
            "mentions": {"users": [], "roles": [], "broadcast": []},
            "replyTo": None,
        }
        event = normalise(payload)
        assert event is not None
        for agent in workspace.agent_ids:
            engine.note_members("general", {agent})
        async with store.transaction():
            await engine.ingest(event)
        stored = await store.deliveries(event.event_id)
        await store.close()
        return {d.decision.agent: (d.decision.directedness, d.decision.policy) for d in stored}

    return asyncio.run(go())


@pytest.mark.parametrize(
    ("text", "agent"),
    [
        ("worker-1, can you say hi?", "worker-1"),
        ("Worker2: the build is red, can you look?", "worker-2"),
        ("lead, what should we ship first?", "lead"),
    ],
)
def test_an_agent_is_addressed_by_its_name_as_people_type_it(text: str, agent: str) -> None:
    decisions = decided(text)
    assert decisions[agent] == (Directedness.TO_ME, Policy.MUST_RESPOND)
    others = {a: d for a, d in decisions.items() if a != agent}
    assert all(policy is Policy.MUST_NOT_RESPOND for _, policy in others.values())


def test_the_word_lead_inside_a_sentence_addresses_nobody() -> None:
    decisions = decided("who will take the lead on the release notes?")
    assert decisions["lead"][1] is not Policy.MUST_RESPOND
