"""A large SQLite ledger built in bulk, with rows a live host would have written.

A few template channels of Slack traffic (people chatting, mentions of the agents and of each
other, thread replies, the agents' own posts), each message received through every agent's
connection, go through the real `c2a.host.Host` into a small ledger; its deliveries are then
settled as harnesses would have settled them (delivered, the questions answered). The big
ledger is those rows cloned channel by channel into as many conversations as asked, with the
channel id (and so every event id) rewritten and the conversations interleaved in time, and
inserted with `executemany` into a file the store itself created (its own schema). Building
a million rows this way takes a minute, where taking them through the host would take hours.

    build(path, rows=1_000_000, conversations=10_000)

Used by `bench/memory.py`; the clone is checked in `tests/bench/test_memory_bench.py`.
"""

from __future__ import annotations

import asyncio
import json
import random
import sqlite3
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from builders import (  # noqa: E402
    SLACK_IDS,
    local_workspace,
    slack_body,
    slack_join,
    slack_message,
)

from c2a.host import Host  # noqa: E402
from core.action_records import to_record  # noqa: E402
from core.actions import Post, React  # noqa: E402
from core.clock import VirtualClock  # noqa: E402
from core.emission import Emission  # noqa: E402
from core.signals import Signal  # noqa: E402
from core.sqlite_store import SQLiteStore  # noqa: E402
from core.store_rows import dumps  # noqa: E402

__all__ = ["Built", "build", "channel_id", "template_bodies"]

BASE = 1767225600  # 2026-01-01T00:00:00Z
PEOPLE = tuple(f"U0P{n:03d}" for n in range(40))
WORDS = [
    "deploy",
    "build",
    "release",
    "staging",
    "production",
    "migration",
    "database",
    "index",
    "query",
    "cache",
    "latency",
    "error",
    "retry",
    "timeout",
    "config",
    "flag",
    "rollout",
    "rollback",
    "review",
    "merge",
    "branch",
    "test",
    "ticket",
    "customer",
    "invoice",
    "report",
    "dashboard",
    "alert",
    "pager",
    "incident",
    "postmortem",
    "lunch",
    "meeting",
    "standup",
    "tomorrow",
    "today",
    "later",
    "please",
    "thanks",
    "maybe",
    "sure",
    "ok",
    "done",
    "looks",
    "good",
]
TEMPLATES = 10  # template channels: the cloned conversations repeat them in turn


def channel_id(n: int) -> str:
    """The Slack id of conversation `n`: fixed width, so no id is part of another."""
    return f"C{n:07d}"


def _text(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 24)))


def template_bodies(channels: int, per_channel: int, seed: int = 17) -> list[dict[str, Any]]:
    """Slack event bodies: the three agents joining each channel, then `per_channel` - 3
    messages in each, the channels taking turns (one message each per round)."""
    rng = random.Random(seed)
    agents = list(SLACK_IDS.values())
    bodies = [
        slack_body(slack_join(agent, channel_id(c), f"{BASE}.{c:06d}"))
        for c in range(channels)
        for agent in agents
    ]
    roots: dict[int, list[str]] = defaultdict(list)
    for n in range(per_channel - len(agents)):
        for c in range(channels):
            ts = f"{BASE + 60 + n * 20 + c}.{rng.randrange(10**6):06d}"
            text, user, thread = _text(rng), rng.choice(PEOPLE), None
            roll = rng.random()
            if roll < 0.08:
                text = f"<@{rng.choice(agents)}> {text}?"
            elif roll < 0.13:
                text = f"<@{rng.choice(PEOPLE)}> {text}"
            elif roll < 0.18:
                user = rng.choice(agents)
            if roots[c] and rng.random() < 0.15:
                thread = rng.choice(roots[c][-10:])
            elif rng.random() < 0.2:
                roots[c].append(ts)
            bodies.append(
                slack_body(
                    slack_message(ts, text, user=user, channel=channel_id(c), thread_ts=thread)
                )
            )
    return bodies


async def _take_in(path: Path, bodies: list[dict[str, Any]]) -> None:
    async def sink(emissions: list[Emission]) -> None:
        return None

    clock = VirtualClock()
    host = Host(local_workspace(), SQLiteStore(str(path)), clock, sink)
    await host.start()
    try:
        for body in bodies:
            event = body["event"]
            clock.set(datetime.fromtimestamp(float(event.get("ts", event["event_ts"])), UTC))
            for agent in SLACK_IDS:
                await host.receive("slack", body, agent)
    finally:
        await host.close()


_SETTLE = (
    "UPDATE deliveries SET status = 'delivered', attempt = 1",
    "UPDATE deliveries SET disposition = 'responded', disposed_at = decided_at "
    "WHERE policy = 'must_respond'",
)


@dataclass(frozen=True, slots=True)
class Template:
    """One template channel's rows: its events in order, each with its receipts and
    deliveries (the delivery rows without their `seq`, which the clone gives anew)."""

    channel: str
    events: list[tuple[Any, ...]]
    receipts: dict[str, list[tuple[Any, ...]]]
    deliveries: dict[int, list[tuple[Any, ...]]]


def _read_templates(db: sqlite3.Connection, channels: int) -> list[Template]:
    for statement in _SETTLE:
        db.execute(statement)
    templates = [
        Template(channel_id(c), [], defaultdict(list), defaultdict(list)) for c in range(channels)
    ]
    by_channel = {t.channel: t for t in templates}
    for row in db.execute(
        "SELECT seq, id, ts, kind, by, data, conversation, thread FROM events ORDER BY seq"
    ):
        by_channel[row[6]].events.append(row)
    for event_id, agent in db.execute("SELECT event_id, agent FROM receipts"):
        by_channel[event_id.split(":")[2]].receipts[event_id].append((event_id, agent))
    columns = [c[1] for c in db.execute("PRAGMA table_info(deliveries)")]
    at_seq = columns.index("seq")
    for row in db.execute(f"SELECT {', '.join(columns)} FROM deliveries ORDER BY seq, agent"):
        by_channel[row[0].split(":")[2]].deliveries[row[at_seq]].append(row)
    return templates


@dataclass(frozen=True, slots=True)
class Built:
    """What `build` wrote."""

    events: int
    conversations: int
    receipts: int
    deliveries: int
    outbox: int


def _clones(
    templates: list[Template], conversations: int, per_channel: int
) -> Iterator[tuple[tuple[Any, ...], list[tuple[Any, ...]], list[tuple[Any, ...]]]]:
    """Each cloned event row (without its seq), its receipt rows and its delivery rows (seq
    in the template's place, -1), in ledger order: round by round, conversation by
    conversation."""
    for n in range(per_channel):
        for c in range(conversations):
            template = templates[c % len(templates)]
            old, new = template.channel, channel_id(c)
            seq, event_id, *rest = template.events[n]
            clone_id = event_id.replace(old, new)
            ts, kind, by, data, _, thread = rest
            event = (clone_id, ts, kind, by, data.replace(old, new), new, thread)
            receipts = [(clone_id, agent) for _, agent in template.receipts[event_id]]
            # Event ids in a delivery (its own, the fragment it continues, the edit it
            # supersedes) all name the template's channel.
            deliveries = [
                tuple(v.replace(old, new) if isinstance(v, str) else v for v in row)
                for row in template.deliveries[seq]
            ]
            yield event, receipts, deliveries


def build(path: Path, rows: int = 1_000_000, conversations: int = 10_000) -> Built:
    """Write a ledger of `rows` events (rounded down to a multiple of `conversations`) over
    `conversations` Slack channels at `path`, which must not exist yet."""
    per_channel = rows // conversations
    if per_channel < len(SLACK_IDS) + 1:
        raise ValueError("at least four rows a conversation: three joins and a message")
    channels = min(TEMPLATES, conversations)
    with tempfile.TemporaryDirectory(prefix="template-ledger-") as folder:
        template_path = Path(folder) / "template.sqlite3"
        asyncio.run(_take_in(template_path, template_bodies(channels, per_channel)))
        with sqlite3.connect(template_path) as template_db:
            templates = _read_templates(template_db, channels)
    asyncio.run(_create(path))  # the store's own schema, through its own migrations
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA journal_mode=OFF")
    db.execute("PRAGMA synchronous=OFF")
    db.execute("PRAGMA cache_size=-262144")
    columns = [c[1] for c in db.execute("PRAGMA table_info(deliveries)")]
    at_seq = columns.index("seq")
    insert_delivery = (
        f"INSERT INTO deliveries ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    )
    answered = _Answered(columns)
    counts = [0, 0, 0, 0]
    db.execute("BEGIN")
    events, receipts, deliveries = [], [], []
    for seq, (event, received, decided) in enumerate(
        _clones(templates, conversations, per_channel), 1
    ):
        events.append((seq, *event))
        receipts.extend(received)
        deliveries.extend((*row[:at_seq], seq, *row[at_seq + 1 :]) for row in decided)
        if len(events) >= 20_000:
            _write(db, insert_delivery, events, receipts, deliveries, answered, counts)
    _write(db, insert_delivery, events, receipts, deliveries, answered, counts)
    db.execute("COMMIT")
    db.execute("PRAGMA journal_mode=WAL")
    db.close()
    return Built(counts[0], conversations, counts[1], counts[2], counts[3])


class _Answered:
    """The outbox rows a host wrote for the deliveries it settled as answered (`_SETTLE`): for
    each `must_respond` one, the `seen` reaction on the message and the agent's reply, sent."""

    def __init__(self, columns: list[str]) -> None:
        self.event, self.agent = columns.index("event_id"), columns.index("agent")
        self.policy, self.at = columns.index("policy"), columns.index("decided_at")

    def rows(
        self, events: list[tuple[Any, ...]], deliveries: list[tuple[Any, ...]]
    ) -> Iterator[tuple[Any, ...]]:
        data = {event[1]: event[5] for event in events}
        for row in deliveries:
            if row[self.policy] != "must_respond":
                continue
            event_id, agent, at = row[self.event], row[self.agent], row[self.at]
            message = json.loads(data[event_id])
            place = {"agent": agent, "platform": "slack"}
            place |= {"conversation": message["conversation"]["id"]}
            key = f"{event_id}:{agent}"
            seen = React(
                **place,
                key=f"{key}:react:seen",
                message_id=message["message_id"],
                signal=Signal.SEEN,
                event_id=event_id,
            )
            reply = Post(**place, key=f"{key}:reply", text="done", in_reply_to=event_id)
            for action in (seen, reply):
                yield action.key, agent, dumps(to_record(action)), "sent", 1, "{}", at, at


def _write(
    db: sqlite3.Connection,
    insert_delivery: str,
    events: list[tuple[Any, ...]],
    receipts: list[tuple[Any, ...]],
    deliveries: list[tuple[Any, ...]],
    answered: _Answered,
    counts: list[int],
) -> None:
    db.executemany(
        "INSERT INTO events (seq, id, ts, kind, by, data, conversation, thread) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        events,
    )
    db.executemany("INSERT INTO receipts (event_id, agent) VALUES (?, ?)", receipts)
    db.executemany(insert_delivery, deliveries)
    sent = list(answered.rows(events, deliveries))
    db.executemany(
        "INSERT INTO outbox (idempotency_key, agent, action, status, attempts, result, "
        "created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        sent,
    )
    for n, written in enumerate((events, receipts, deliveries, sent)):
        counts[n] += len(written)
        written.clear()


async def _create(path: Path) -> None:
    store = SQLiteStore(str(path))
    await store.open()
    await store.close()
