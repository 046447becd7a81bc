"""A platform's later copies of one event are not normalised again: the host reuses the first
copy's event, restamped with each copy's own delivery facts, and everything else of the
receive path is as it was. Proved on the payload corpus (tests/payloads/) and a three-agent
channel burst: the decisions, the emissions and the ledger are byte for byte the same with the
cache and without it."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from builders import HUMAN, TEAM

from c2a.host import Host
from c2a.platforms import installed
from c2a.repeat_cache import RepeatCache
from core.clock import VirtualClock, parse_time
from core.emission import Emission
from core.events import ChatEvent
from core.manifest import Workspace, load_manifest
from core.migrations import RECORD_TABLE
from core.platform import Repeats
from core.sqlite_store import SQLiteStore

CORPUS = Path(__file__).resolve().parent.parent / "payloads"
WORKSPACE = Workspace.from_manifest(
    load_manifest(CORPUS / "team.yaml", platforms=installed()), installed()
)
SLACK_CHANNELS = ("C0GEN", "C0OPS")
DISCORD_CHANNEL = "820000000000000001"
AT = "2026-01-01T00:02:00Z"

Step = tuple[str, str, dict[str, Any], str | None]  # when, platform, payload, via


def copy_for(platform: str, payload: dict[str, Any], via: str) -> dict[str, Any]:
    """`payload` as `via`'s connection receives it: on Slack each app's copy has its own
    delivery id and names its own bot."""
    if platform != "slack" or "authorizations" not in payload:
        return payload
    authorization = {**payload["authorizations"][0], "user_id": WORKSPACE.user_id("slack", via)}
    return {
        **payload,
        "event_id": f"{payload['event_id']}-{via}",
        "authorizations": [authorization],
    }


def joins() -> Iterator[Step]:
    for agent in WORKSPACE.agent_ids:
        for channel in SLACK_CHANNELS:
            event = {
                "type": "member_joined_channel",
                "user": WORKSPACE.user_id("slack", agent),
                "channel": channel,
                "channel_type": "C",
                "event_ts": "1767222000.000001",
            }
            body = {"type": "event_callback", "team_id": TEAM, "event_id": f"EvJ{agent}{channel}"}
            yield AT, "slack", {**body, "event": event}, agent


def corpus() -> Iterator[Step]:
    """Every corpus file, its setup then its payload through each receiving connection."""
    for platform in ("slack", "discord"):
        for path in sorted((CORPUS / platform).glob("*.json")):
            case = json.loads(path.read_text(encoding="utf-8"))
            for setup in case.get("setup", ()):
                yield case["at"], setup["platform"], setup["payload"], setup.get("via")
            for via in case["via"]:
                yield case["at"], platform, copy_for(platform, case["payload"], via), via


def channel_burst(count: int) -> Iterator[Step]:
    """`count` channel messages, every other one naming the lead, each arriving once per
    agent connection plus an `app_mention` to the lead, the copies of neighbours interleaved."""
    lead = WORKSPACE.user_id("slack", "lead")
    copies: list[list[Step]] = []
    for n in range(count):
        text = f"<@{lead}> can you look at {n}?" if n % 2 else f"status update {n}"
        event = {
            "type": "message",
            "channel": "C0GEN",
            "channel_type": "channel",
            "user": HUMAN,
            "text": text,
            "ts": f"17672257{n:02d}.000100",
        }
        base = {
            "type": "event_callback",
            "team_id": TEAM,
            "event_id": f"EvB{n}",
            "authorizations": [{"team_id": TEAM, "user_id": lead, "is_bot": True}],
            "event": event,
        }
        mine = [(AT, "slack", copy_for("slack", base, a), a) for a in WORKSPACE.agent_ids]
        if n % 2:
            mention = {**base, "event": {**event, "type": "app_mention"}}
            mine.append((AT, "slack", copy_for("slack", mention, "lead"), "lead"))
        copies.append(mine)
    for turn in range(len(WORKSPACE.agent_ids) + 1):
        for mine in copies:
            if turn < len(mine):
                yield mine[turn]


async def run(steps: list[Step], *, repeats: bool) -> tuple[list[str], str, int, int]:
    """What receiving `steps` gave: each outcome and emission, the whole ledger, how many
    payloads were normalised and how many were known as repeats."""
    emitted: list[Emission] = []

    async def sink(emissions: list[Emission]) -> None:
        emitted.extend(emissions)

    store = SQLiteStore(":memory:")
    clock = VirtualClock(parse_time(AT))
    host = Host(WORKSPACE, store, clock, sink, repeats=repeats)
    normalised = 0

    def counting(normalise: Any) -> Any:
        def counted(payload: Mapping[str, Any]) -> ChatEvent | None:
            nonlocal normalised
            normalised += 1
            return normalise(payload)  # type: ignore[no-any-return]

        return counted

    host.normalisers = {name: counting(n) for name, n in host.normalisers.items()}
    await host.start()
    lines: list[str] = []
    try:
        for agent in WORKSPACE.agent_ids:
            host.engine.note_members(DISCORD_CHANNEL, {agent})
        for at, platform, payload, via in steps:
            clock.set(parse_time(at))
            outcome = await host.receive(platform, payload, via)
            lines.append(repr(outcome))
        lines.extend(repr(emission) for emission in emitted)
        ledger = "\n".join(
            line for line in store.db.iterdump() if RECORD_TABLE not in line
        )  # all but when the schema was applied, which is wall time
    finally:
        await host.close()
    return lines, ledger, normalised, host.repeats.hits


def same_with_and_without_the_cache(steps: list[Step]) -> tuple[int, int, int]:
    cached = asyncio.run(run(steps, repeats=True))
    plain = asyncio.run(run(steps, repeats=False))
    assert cached[0] == plain[0]  # every outcome and emission, in order
    assert cached[1] == plain[1]  # the whole ledger
    assert plain[3] == 0
    return plain[2], cached[2], cached[3]


def test_the_corpus_is_decided_byte_for_byte_the_same_with_the_repeat_cache() -> None:
    steps = [*joins(), *corpus()]
    without, with_cache, hits = same_with_and_without_the_cache(steps)
    assert hits >= 60  # the corpus's later copies of posted messages
    assert with_cache == without - hits


def test_a_three_agent_burst_normalises_each_message_once_per_payload_kind() -> None:
    steps = [*joins(), *channel_burst(20)]
    without, with_cache, hits = same_with_and_without_the_cache(steps)
    joined = len(WORKSPACE.agent_ids) * len(SLACK_CHANNELS)
    assert without == joined + 20 * len(WORKSPACE.agent_ids) + 10
    # each message once, and each app_mention once: every other copy is a repeat
    assert with_cache == joined + 20 + 10
    assert hits == 20 * (len(WORKSPACE.agent_ids) - 1)


def test_the_cache_forgets_its_oldest_event_past_its_size() -> None:
    normalised: list[str] = []

    def normalise(payload: Mapping[str, Any]) -> ChatEvent | None:
        normalised.append(str(payload["key"]))
        return ChatEvent.__new__(ChatEvent)

    cache = RepeatCache({"toy": Repeats(lambda p: str(p["key"]))}, size=2)
    for key in ("a", "b", "a", "c", "a", "b"):
        cache.read("toy", {"key": key}, normalise)
    # a, b kept; a again is a hit; c pushes out a; a again pushes out b; b is normalised again
    assert normalised == ["a", "b", "c", "a", "b"]
    assert cache.hits == 1


def test_a_platform_without_repeats_or_a_payload_without_a_key_is_always_normalised() -> None:
    calls: list[str] = []

    def normalise(payload: Mapping[str, Any]) -> ChatEvent | None:
        calls.append(str(payload.get("key")))
        return ChatEvent.__new__(ChatEvent)

    cache = RepeatCache({"toy": Repeats(lambda p: p.get("key"))})
    for _ in range(2):
        cache.read("other", {"key": "a"}, normalise)
        cache.read("toy", {}, normalise)
    assert calls == ["a", "None", "a", "None"]
    assert cache.hits == 0


def reaction_turns() -> Iterator[Step]:
    """A reaction put on, taken off and put on again, each change arriving through every
    agent's connection: the third change's payloads are the first's, byte for byte."""
    case = json.loads((CORPUS / "discord" / "reaction_add_agree.json").read_text("utf-8"))
    for setup in case["setup"]:
        yield case["at"], setup["platform"], setup["payload"], setup.get("via")
    added = case["payload"]
    data = {k: v for k, v in added["d"].items() if k not in ("member", "message_author_id")}
    removed = {**added, "t": "MESSAGE_REACTION_REMOVE", "d": data}
    for change in (added, removed, added):
        for via in WORKSPACE.agent_ids:
            yield case["at"], "discord", change, via


def test_a_reaction_added_again_is_a_new_event_though_its_copies_are_not_normalised() -> None:
    steps = [*joins(), *reaction_turns()]
    without, with_cache, hits = same_with_and_without_the_cache(steps)
    agents = len(WORKSPACE.agent_ids)
    assert hits == 3 * agents - 2  # the add and the removal once each; the add again none
    assert with_cache == without - hits
    ledger = asyncio.run(run(steps, repeats=True))[1]
    assert "discord:1300000000000000011+810000000000000001:👍#2" in ledger  # not dropped
    assert "discord:1300000000000000011+810000000000000001:👍#3" not in ledger  # nor doubled
