"""The payload corpus (tests/payloads/): every event kind and variant Slack and Discord send a
bot, each decided for every agent of the team in tests/payloads/team.yaml.

Each file holds one payload in the platform's documented shape (`_source` says where the shape
comes from), the agents whose connections receive it (`via`), the payloads it needs before it
(`setup`: the message a delete or reaction is about), and what must come of it: `outcome`
(`new`, `repeat`, `transient`, or `ignored` for a payload c2a leaves alone on purpose) and, per
agent, every message the host sends it, in order. It goes through `Host.receive`, the path of
live traffic and of `c2a replay`; a payload that crashes, is quarantined, is dropped without
being expected to be, or is decided otherwise fails the test.
"""

from __future__ import annotations

import asyncio
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from c2a.host import Host
from c2a.platforms import installed
from c2a.records import record_of
from core.clock import VirtualClock, parse_time
from core.emission import Emission
from core.manifest import Workspace, load_manifest
from core.sqlite_store import SQLiteStore

CORPUS = Path(__file__).resolve().parent.parent / "payloads"
FILES = sorted((CORPUS / "slack").glob("*.json")) + sorted((CORPUS / "discord").glob("*.json"))
WORKSPACE = Workspace.from_manifest(
    load_manifest(CORPUS / "team.yaml", platforms=installed()), installed()
)

# Before every file: each agent is in the usual channels, as its own connection reports.
SLACK_CHANNELS = ("C0GEN", "C0OPS")
DISCORD_CHANNEL = "820000000000000001"


def summary(sent: Emission) -> str:
    """One line for what an agent was sent: a delivery's verdict, a cancellation, typing."""
    emission = record_of(sent)
    body = emission.body
    if emission.kind != "rpc":
        return f"{emission.kind} {body.get('action', body.get('reason', ''))}".strip()
    params = body["params"]
    if body["method"] == "chat/deliver":
        where = params["conversation"]["kind"]
        return " ".join(
            (
                params["target"]["directedness"],
                params["attention"]["policy"],
                params["injection"]["mode"],
                params["attention"]["reason"],
                f"in {where}",
            )
        )
    if body["method"] == "notifications/cancelled":
        return f"cancelled {params['eventId']} {params['reason']}"
    return body["method"].removeprefix("notifications/")


def background(platform: str, at: datetime) -> list[tuple[str, dict[str, Any], str]]:
    """Membership every file starts from."""
    if platform == "slack":
        return [
            (
                "slack",
                {
                    "type": "event_callback",
                    "team_id": "T0LOCAL",
                    "event_id": f"EvJOIN{agent}{channel}",
                    "event": {
                        "type": "member_joined_channel",
                        "user": WORKSPACE.user_id("slack", agent),
                        "channel": channel,
                        "channel_type": "C",
                        "event_ts": f"{int(at.timestamp()) - 3600}.000001",
                    },
                },
                agent,
            )
            for agent in WORKSPACE.agent_ids
            for channel in SLACK_CHANNELS
        ]
    return []  # Discord says nothing of membership: it is noted at start, as live


def copy_for(platform: str, payload: dict[str, Any], via: str, index: int) -> dict[str, Any]:
    """The payload as `via`'s connection receives it: the file holds the first receiver's copy;
    on Slack each other app's copy names its own bot in `authorizations`."""
    if index == 0 or platform != "slack" or "authorizations" not in payload:
        return payload
    authorization = {**payload["authorizations"][0], "user_id": WORKSPACE.user_id("slack", via)}
    return {**payload, "authorizations": [authorization]}


async def decide(case: dict[str, Any], platform: str) -> tuple[str, dict[str, list[str]], int]:
    """Run a corpus file through a fresh host; what its payload did, and what was quarantined."""
    sent: list[Emission] = []

    async def sink(emissions: list[Emission]) -> None:
        sent.extend(emissions)

    store = SQLiteStore(":memory:")
    at = parse_time(case["at"])
    host = Host(WORKSPACE, store, VirtualClock(at), sink)
    await host.start()
    try:
        for agent in WORKSPACE.agent_ids:
            host.engine.note_members(DISCORD_CHANNEL, {agent})
        setup = [(s["platform"], s["payload"], s.get("via")) for s in case.get("setup", ())]
        for source, payload, via in [*background(platform, at), *setup]:
            await host.receive(source, payload, via)
        sent.clear()
        outcomes = [
            await host.receive(platform, copy_for(platform, case["payload"], via, index), via)
            for index, via in enumerate(case["via"])
        ]
        quarantined = store.db.execute("SELECT COUNT(*) FROM quarantine").fetchone()[0]
    finally:
        await host.close()
    first = outcomes[0]
    outcome = "ignored" if first is None else first.status
    found: dict[str, list[str]] = {}
    for emission in sent:
        found.setdefault(emission.agent, []).append(summary(emission))
    return outcome, found, int(quarantined)


def test_the_corpus_holds_enough_distinct_variants() -> None:
    slack = [p for p in FILES if p.parent.name == "slack"]
    discord = [p for p in FILES if p.parent.name == "discord"]
    assert len(slack) >= 60 and len(discord) >= 40
    payloads = {json.dumps(json.loads(p.read_text())["payload"], sort_keys=True) for p in FILES}
    assert len(payloads) == len(FILES)  # no two files hold the same payload


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_each_payload_is_decided_as_the_corpus_says(path: Path) -> None:
    case = json.loads(path.read_text(encoding="utf-8"))
    assert case.get("_source"), "say where the payload's shape comes from"
    outcome, found, quarantined = asyncio.run(decide(case, path.parent.name))
    assert quarantined == 0, "the payload or its setup could not be read"
    assert outcome == case["outcome"]
    assert found == case.get("expect", {})
