"""Fuzz the payload boundary: every normaliser (Slack, Discord, web chat) and the replay line
reader, fed real-shaped payloads with any field replaced by another JSON type, a huge number, a
huge string or a deep structure, or removed; and entirely random JSON.

Only the project's own error may escape (`PayloadError` from a normaliser, `TraceError` from
`parse_record`), within the time bound; an event that does come out must be one the core can
store (its time formats, its data encodes); and whatever the payload, the host can write it to
the quarantine table (`quarantine_text` always gives JSON).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import orjson
from bounds import timed
from builders import discord_message, line, slack_body, slack_message
from hypothesis import given
from hypothesis import strategies as st
from secret_samples import SHAPES

from adapters.discord import normalise as normalise_discord
from adapters.slack import normalise as normalise_slack
from adapters.webchat.normalise import normalise as normalise_webchat
from c2a.host import quarantine_text
from c2a.replay import parse_record
from core.clock import format_time
from core.codec import event_to_data
from core.errors import PayloadError, TraceError
from core.events import ChatEvent
from core.redact import Redactor

ADAPTER_TESTS = Path(__file__).resolve().parents[1] / "adapters"

Normaliser = Callable[[Mapping[str, Any]], ChatEvent | None]
NORMALISERS: dict[str, Normaliser] = {
    "slack": normalise_slack,
    "discord": normalise_discord,
    "webchat": normalise_webchat,
}


def _recorded(platform: str) -> list[dict[str, Any]]:
    paths = sorted((ADAPTER_TESTS / platform / "payloads").glob("*.json"))
    return [json.loads(path.read_text()) for path in paths]


def _webchat(**fields: Any) -> dict[str, Any]:
    base = {"type": "message", "workspace": "local", "id": "7", "channel": "general"}
    return {**base, "user": "ana", "ts": "2026-11-22T14:00:00.000001Z", "text": "hi", **fields}


SEEDS: dict[str, list[dict[str, Any]]] = {
    "slack": [
        *_recorded("slack"),
        slack_body(slack_message("1767225601.000100", "<@U0LEAD> hi", thread_ts="1767225600.1")),
    ],
    "discord": [*_recorded("discord"), discord_message("1300000000000000001", "hi")],
    "webchat": [
        _webchat(thread="3", replyTo="5", mentions={"users": ["lead"], "roles": ["backend"]}),
        _webchat(type="edit", ts="2026-11-22T14:00:05Z"),
        _webchat(type="delete"),
        _webchat(type="reaction_added", emoji="👀", itemUser="lead"),
        _webchat(type="typing"),
        _webchat(type="member_joined", channel="dm:ana:lead"),
    ],
}

# Any JSON-shaped value, NaN and the infinities included (Python's json reads them).
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


def _deep(depth: int, as_dict: bool) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"d": value} if as_dict else [value]
    return value


_hostile = st.one_of(
    _json,
    st.sampled_from([10**5000, -(10**5000), 2**64, -(2**63) - 1, float("nan"), float("inf")]),
    st.integers(min_value=2**63),
    st.builds(
        lambda n, c: c * n, st.sampled_from([1_025, 70_000, 500_000]), st.sampled_from("9xé<")
    ),
    st.sampled_from(["9" * 5000, "1712345678." + "9" * 5000, "99999-01-01T00:00:00Z"]),
    st.sampled_from(["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00", "253402300799"]),
    st.builds(_deep, st.sampled_from([50, 900, 5000]), st.booleans()),
)


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in `value` a field or an item sits, outermost first (not inside a structure
    planted deep on purpose: real payloads are a few levels deep)."""
    if len(prefix) > 8:
        return []
    found: list[tuple[Any, ...]] = []
    items: Any = ()
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    for key, inner in items:
        found.append((*prefix, key))
        found.extend(_paths(inner, (*prefix, key)))
    return found


@st.composite
def _mutated(draw: st.DrawFn, platform: str) -> Any:
    payload = copy.deepcopy(draw(st.sampled_from(SEEDS[platform])))
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        paths = _paths(payload)
        if not paths:
            break
        *parents, last = draw(st.sampled_from(paths))
        container = payload
        for key in parents:
            container = container[key]
        if draw(st.booleans()) and isinstance(container, dict):
            del container[last]
        else:
            container[last] = draw(_hostile)
    return payload


REDACTOR = Redactor(shapes=SHAPES)


def _check(platform: str, payload: Any) -> None:
    refused: PayloadError | None = None
    try:
        event = timed(f"{platform} normalise", lambda: NORMALISERS[platform](payload))
    except PayloadError as error:
        event, refused = None, error
    if refused is not None:
        assert refused.details.get("field") is not None, refused
        assert len(str(refused)) < 300, "an error quotes a value short, never whole"
        orjson.loads(timed("quarantine_text", lambda: quarantine_text(payload, REDACTOR)))
    elif event is not None:
        format_time(event.created_at)
        orjson.dumps(event_to_data(event))


@given(st.data())
def test_a_mutated_slack_body_gives_an_event_nothing_or_a_payload_error(
    data: st.DataObject,
) -> None:
    _check("slack", data.draw(_mutated("slack")))


@given(st.data())
def test_a_mutated_discord_dispatch_gives_an_event_nothing_or_a_payload_error(
    data: st.DataObject,
) -> None:
    _check("discord", data.draw(_mutated("discord")))


@given(st.data())
def test_a_mutated_web_chat_payload_gives_an_event_nothing_or_a_payload_error(
    data: st.DataObject,
) -> None:
    _check("webchat", data.draw(_mutated("webchat")))


@given(st.sampled_from(sorted(NORMALISERS)), _json)
def test_any_json_at_all_gives_an_event_nothing_or_a_payload_error(
    platform: str, value: Any
) -> None:
    _check(platform, value)


_GOOD_LINE = line("2026-01-01T00:00:01Z", "slack", SEEDS["slack"][-1])
# Lines no JSON encoder writes, but a file can hold.
_RAW_LINES = [
    _GOOD_LINE.replace('"1767225601.000100"', "9" * 5000),
    _GOOD_LINE.replace('"hi', '"\xff\xfe hi').encode("latin-1", "replace"),
    _GOOD_LINE.encode()[:40] + b"\xc3\x28" + _GOOD_LINE.encode()[40:],
    _GOOD_LINE.replace('"hi', '"\\ud800 hi'),
    "[" * 5000 + "]" * 5000,
    '{"at": NaN, "platform": "slack", "payload": {}}',
]
_RECORD_KEYS = st.sampled_from(["at", "platform", "payload", "via"])


def _json_line(record: dict[str, Any]) -> str:
    try:
        return json.dumps(record)
    except (ValueError, RecursionError):  # an integer past 4,300 digits, or too deep to write
        return "{}"


@given(
    st.one_of(
        st.binary(max_size=200),
        st.text(max_size=200),
        st.sampled_from(_RAW_LINES),
        st.builds(
            lambda platform, payload, at: line(at, platform, payload).encode(),
            st.sampled_from([*NORMALISERS, "irc"]),
            st.dictionaries(st.text(max_size=8), _json, max_size=4),
            st.sampled_from(["2026-01-01T00:00:01Z", "9999-12-31T23:59:59-05:00", "yesterday"]),
        ),
        st.builds(_json_line, st.dictionaries(_RECORD_KEYS, _hostile)),
    )
)
def test_any_replay_line_is_a_record_or_a_trace_error(raw: str | bytes) -> None:
    refused: TraceError | None = None
    try:
        record = timed("parse_record", lambda: parse_record(raw))
    except TraceError as error:
        refused = error
    if refused is not None:
        assert "\n" not in str(refused) and len(str(refused)) < 300
    else:
        format_time(record.at)
        assert record.platform in NORMALISERS
