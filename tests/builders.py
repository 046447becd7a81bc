"""Payloads in the real Slack and Discord shapes, trace lines, and a one-call replay, for tests."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import Iterable
from datetime import timedelta
from pathlib import Path
from typing import Any

from adapters.slack import normalise
from c2a.platforms import installed
from c2a.records import record_of
from c2a.replay import ReplayStats, replay
from core.actions import Post
from core.clock import VirtualClock, parse_time
from core.engine import Engine
from core.manifest import Workspace, load_manifest, parse_manifest
from core.sqlite_store import SQLiteStore

ROOT = Path(__file__).resolve().parent.parent
LOCAL = ROOT / "manifests" / "examples" / "team.yaml"

TEAM = "T0LOCAL"
GUILD = "800000000000000001"
HUMAN = "U0ALICE"
HUMAN2 = "U0BOB"
D_HUMAN = "810000000000000001"
D_HUMAN2 = "810000000000000002"
LEAD, W1, W2 = "U0LEAD", "U0W1", "U0W2"
D_LEAD, D_W1, D_W2 = "900000000000000001", "900000000000000002", "900000000000000003"
D_BACKEND_ROLE = "700000000000000001"
D_LEAD_MANAGED_ROLE = "700000000000000101"
SLACK_IDS = {"lead": LEAD, "worker-1": W1, "worker-2": W2}
DISCORD_IDS = {"lead": D_LEAD, "worker-1": D_W1, "worker-2": D_W2}

START = parse_time("2026-01-01T00:00:01Z")

_counter = {"n": 0}


def local_workspace(**changes: Any) -> Workspace:
    """The shipped local manifest, with top-level keys replaced by `changes`."""
    if not changes:
        return Workspace.from_manifest(load_manifest(LOCAL, platforms=installed()), installed())
    import yaml

    data = yaml.safe_load(LOCAL.read_text())
    data.update(changes)
    return Workspace.from_manifest(parse_manifest(data, platforms=installed()), installed())


def _event_id() -> str:
    _counter["n"] += 1
    return f"Ev{_counter['n']:08d}"


def slack_body(event: dict[str, Any], via: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "token": "verification-token-not-a-secret",
        "team_id": TEAM,
        "api_app_id": "A0LOCAL",
        "event": event,
        "type": "event_callback",
        "event_id": _event_id(),
        "event_time": int(float(event.get("ts", event.get("event_ts", "1767225600")))),
    }
    if via is not None:
        body["authorizations"] = [
            {"enterprise_id": None, "team_id": TEAM, "user_id": SLACK_IDS[via], "is_bot": True}
        ]
    return body


def slack_message(
    ts: str,
    text: str,
    *,
    user: str = HUMAN,
    channel: str = "C0GEN",
    channel_type: str = "channel",
    thread_ts: str | None = None,
    event_type: str = "message",
    bot_id: str | None = None,
) -> dict[str, Any]:
    event: dict[str, Any] = {
        "type": event_type,
        "user": user,
        "text": text,
        "ts": ts,
        "channel": channel,
        "event_ts": ts,
        "team": TEAM,
    }
    if event_type == "message":
        event["channel_type"] = channel_type
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    if bot_id is not None:
        event["bot_id"] = bot_id
    return event


def slack_edit(
    ts: str,
    edited_ts: str,
    old: str,
    new: str,
    *,
    user: str = HUMAN,
    channel: str = "C0GEN",
    channel_type: str = "channel",
) -> dict[str, Any]:
    return {
        "type": "message",
        "subtype": "message_changed",
        "hidden": True,
        "channel": channel,
        "channel_type": channel_type,
        "ts": edited_ts,
        "event_ts": edited_ts,
        "message": {
            "type": "message",
            "user": user,
            "text": new,
            "ts": ts,
            "edited": {"user": user, "ts": edited_ts},
        },
        "previous_message": {"type": "message", "user": user, "text": old, "ts": ts},
    }


def slack_delete(
    ts: str,
    deleted_ts: str,
    old: str,
    *,
    user: str = HUMAN,
    channel: str = "C0GEN",
    channel_type: str = "channel",
) -> dict[str, Any]:
    return {
        "type": "message",
        "subtype": "message_deleted",
        "hidden": True,
        "channel": channel,
        "channel_type": channel_type,
        "ts": deleted_ts,
        "event_ts": deleted_ts,
        "deleted_ts": ts,
        "previous_message": {"type": "message", "user": user, "text": old, "ts": ts},
    }


def slack_reaction(
    item_ts: str,
    name: str,
    *,
    user: str = HUMAN,
    item_user: str = LEAD,
    channel: str = "C0GEN",
    event_ts: str = "1767225700.000100",
    removed: bool = False,
) -> dict[str, Any]:
    return {
        "type": "reaction_removed" if removed else "reaction_added",
        "user": user,
        "reaction": name,
        "item_user": item_user,
        "item": {"type": "message", "channel": channel, "ts": item_ts},
        "event_ts": event_ts,
    }


def slack_join(user: str, channel: str = "C0GEN", event_ts: str = "1767225500.000100"):
    return {
        "type": "member_joined_channel",
        "user": user,
        "channel": channel,
        "channel_type": "C",
        "team": TEAM,
        "event_ts": event_ts,
    }


def discord_message(
    message_id: str,
    content: str,
    *,
    author: str = D_HUMAN,
    bot: bool = False,
    channel: str = "820000000000000001",
    guild: str | None = GUILD,
    mentions: Iterable[str] = (),
    roles: Iterable[str] = (),
    everyone: bool = False,
    reply_to: tuple[str, str] | None = None,
    timestamp: str = "2026-01-01T00:00:00+00:00",
) -> dict[str, Any]:
    d: dict[str, Any] = {
        "id": message_id,
        "type": 19 if reply_to else 0,
        "channel_id": channel,
        "author": {"id": author, "username": f"user{author[-2:]}", "bot": bot},
        "content": content,
        "timestamp": timestamp,
        "edited_timestamp": None,
        "tts": False,
        "mention_everyone": everyone,
        "mentions": [{"id": m, "username": f"user{m[-2:]}"} for m in mentions],
        "mention_roles": list(roles),
        "attachments": [],
        "embeds": [],
        "pinned": False,
    }
    if guild is not None:
        d["guild_id"] = guild
    if reply_to is not None:
        d["message_reference"] = {"message_id": reply_to[0], "channel_id": channel}
        d["referenced_message"] = {"id": reply_to[0], "author": {"id": reply_to[1]}}
    return {"op": 0, "s": 1, "t": "MESSAGE_CREATE", "d": d}


def discord_post(text: str, mentions: Iterable[str] = (), in_reply_to: str | None = None) -> Post:
    """The lead's post in a Discord channel, keyed as chat_send_message keys one."""
    return Post(
        agent="lead",
        platform="discord",
        conversation="820000000000000001",
        key="discord:1240000000000000001:lead:send:abc",
        text=text,
        mentions=tuple(mentions),
        in_reply_to=in_reply_to,
    )


def discord_dispatch(name: str, d: dict[str, Any]) -> dict[str, Any]:
    return {"op": 0, "s": 1, "t": name, "d": d}


def line(at: str, platform: str, payload: dict[str, Any], via: str | None = None) -> str:
    record: dict[str, Any] = {"at": at, "platform": platform, "payload": payload}
    if via is not None:
        record["via"] = via
    return json.dumps(record)


FLAT_BASE = 1767225600  # 2026-01-01T00:00:00Z, the second a flat-channel trace counts from


def flat_at(second: int) -> str:
    """The trace time `second` seconds into a flat-channel conversation."""
    return f"2026-01-01T{second // 3600:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z"


def flat_say(second: int, text: str, user: str = HUMAN) -> str:
    """A trace line: `user` says `text` in #general (C0GEN), `second` seconds in."""
    event = slack_message(f"{FLAT_BASE + second}.000100", text, user=user)
    return line(flat_at(second), "slack", slack_body(event))


def flat_joined() -> list[str]:
    """The three agents joining #general at second 0."""
    return [line(flat_at(0), "slack", slack_body(slack_join(u))) for u in (LEAD, W1, W2)]


def run(
    lines: Iterable[str],
    workspace: Workspace | None = None,
    *,
    store: str = ":memory:",
    compact: bool = False,
) -> tuple[list[dict[str, Any]], ReplayStats, str]:
    """Replay trace lines; returns the output records, the stats and the report text."""
    out, report = io.StringIO(), io.StringIO()
    stats = asyncio.run(
        replay(
            workspace or local_workspace(),
            list(lines),
            SQLiteStore(store),
            out,
            report,
            compact=compact,
        )
    )
    records = [json.loads(text) for text in out.getvalue().splitlines()]
    return records, stats, report.getvalue()


def is_membership(rpc: dict[str, Any]) -> bool:
    content = rpc.get("params", {}).get("content") or [{}]
    return bool(content[0].get("type") == "membership")


def delivered(records: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """chat/deliver params per agent, in order, leaving out membership changes."""
    found: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        rpc = record.get("rpc")
        if rpc and rpc.get("method") == "chat/deliver" and not is_membership(rpc):
            found.setdefault(record["agent"], []).append(rpc["params"])
    return found


def axes(params: dict[str, Any]) -> tuple[str, str, str]:
    return (
        params["target"]["directedness"],
        params["attention"]["policy"],
        params["injection"]["mode"],
    )


async def ingest_slack(engine: Engine, bodies: Iterable[dict[str, Any]]) -> None:
    """`engine` takes each Slack payload of `bodies`, in one transaction of its store."""
    async with engine.store.transaction():
        for body in bodies:
            event = normalise(body)
            assert event is not None
            await engine.ingest(event)


async def took(bodies: list[dict[str, Any]]) -> tuple[Engine, VirtualClock]:
    """A fresh engine on the local workspace and an in-memory ledger, on a virtual clock at
    `START`, that has taken the Slack `bodies`."""
    clock = VirtualClock(START)
    store = SQLiteStore()
    await store.open()
    engine = Engine(local_workspace(), store, clock)
    await ingest_slack(engine, bodies)
    return engine, clock


async def swept(engine: Engine) -> list[tuple[str, str, dict[str, Any]]]:
    """One follow-up sweep of `engine`, in a transaction: (agent, kind, body) of each emission
    as the host records it."""
    async with engine.store.transaction():
        return [(e.agent, e.kind, e.body) for e in map(record_of, await engine.sweep())]


GENERAL_QUESTION = "slack:T0LOCAL:C0GEN:1767225601.000100"


async def reminded_in_general() -> tuple[Engine, VirtualClock]:
    """worker-1 asked "deploy done?" in #general (`GENERAL_QUESTION`), where the lead and
    worker-2 are too; its harness took the question and, past the deadline, its reminder, and
    answered neither."""
    asked = slack_body(slack_message("1767225601.000100", f"<@{W1}> deploy done?"))
    engine, clock = await took([*(slack_body(slack_join(u)) for u in (LEAD, W1, W2)), asked])
    async with engine.store.transaction():
        await engine.store.mark_delivered(GENERAL_QUESTION, "worker-1", 1)
    await reminder_taken(engine, clock, "worker-1")
    return engine, clock


async def reminder_taken(engine: Engine, clock: VirtualClock, agent: str) -> str:
    """Past the answer deadline, the one reminder a sweep finds due goes to `agent`, whose
    harness takes it; returns its event id."""
    clock.advance(timedelta(minutes=5, seconds=1))
    ((to, _, reminder),) = await swept(engine)
    assert to == agent
    event_id = str(reminder["params"]["eventId"])
    async with engine.store.transaction():
        await engine.store.mark_delivered(event_id, agent, 1)
    return event_id
