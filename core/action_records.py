"""The outbox's stored form of an action (`core.actions`): `to_record` writes the camelCase
mapping the outbox has always held, so rows written by older versions read the same, and
`from_record` reads one back as the typed value a sender pattern-matches on, or raises
`StoreError` naming what no sender could perform. Records of the "is working" indicator
written under its older names (`typing`, `status`) read as `Working`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from core.actions import (
    WORKING_TIMEOUT_S,
    Action,
    Ask,
    Choice,
    Delete,
    Edit,
    Post,
    React,
    Unreact,
    Visibility,
    Working,
)
from core.errors import StoreError
from core.post_files import files_from_record, files_record
from core.record_fields import mentions as _mentions
from core.record_fields import optional as _optional
from core.record_fields import text as _text
from core.signals import Signal

__all__ = ["from_record", "to_record"]

_VISIBILITIES: tuple[Visibility, ...] = get_args(Visibility)
# Every kind a record may name: the actions' own, and the indicator's older names.
_KINDS = frozenset(
    {action.kind for action in (Post, Edit, Delete, React, Unreact, Working, Ask)}
    | {"typing", "status"}
)


def to_record(action: Action) -> dict[str, Any]:
    """The outbox's stored form of an action."""
    base = {
        "action": action.kind,
        "agent": action.agent,
        "platform": action.platform,
        "conversation": action.conversation,
        "idempotencyKey": action.key,
    }
    match action:
        case Post():
            return {
                **base,
                "thread": action.thread,
                "text": action.text,
                "visibility": action.visibility,
                "directedness": action.directedness,
                "mentions": list(action.mentions),
                "inReplyTo": action.in_reply_to,
                "writing": action.writing,
                **({"person": action.person} if action.person is not None else {}),
                **files_record(action.files),
            }
        case Edit():
            return {
                **base,
                "thread": action.thread,
                "messageId": action.message_id,
                "text": action.text,
                "mentions": list(action.mentions),
                "draft": action.draft,
            }
        case Delete():
            return {
                **base,
                "thread": action.thread,
                "messageId": action.message_id,
            }
        case React():
            return {
                **base,
                "messageId": action.message_id,
                "signal": action.signal.value if action.signal else None,
                "emoji": action.emoji,
                "eventId": action.event_id,
                "eta": action.eta,
                "placed": None if action.placed is None else sorted(s.value for s in action.placed),
            }
        case Unreact():
            return {
                **base,
                "messageId": action.message_id,
                "signal": action.signal.value,
                "eventId": action.event_id,
            }
        case Working():
            return {
                **base,
                "on": action.on,
                "status": action.status,
                "thread": action.thread,
                "inReplyTo": action.in_reply_to,
                "messageId": action.message_id,
                "conversationKind": action.conversation_kind,
                "timeoutSeconds": action.timeout_s,
            }
        case Ask():
            return {
                **base,
                "request": action.request,
                "text": action.text,
                "choices": [[c.id, c.label, c.allow] for c in action.choices],
                "thread": action.thread,
                "inReplyTo": action.in_reply_to,
                "messageId": action.message_id,
                "outcome": action.outcome,
            }


def from_record(record: Mapping[str, Any]) -> Action:
    """The typed action an outbox record holds; raises StoreError naming what is wrong with a
    record no sender could perform (it stays unsendable: retrying cannot mend it). Records of
    the indicator written as `typing` or `status` read as `Working`."""
    kind = record.get("action")
    if kind not in _KINDS:
        raise StoreError(f"outbox record {record.get('idempotencyKey')!r}: no action {kind!r}")
    try:
        base: dict[str, Any] = {
            "agent": _agent(record),
            "platform": _text(record, "platform"),
            "conversation": _text(record, "conversation"),
            "key": _text(record, "idempotencyKey"),
        }
        match kind:
            case "send":
                visibility = _visibility(record.get("visibility") or "thread")
                return Post(
                    **base,
                    text=_text(record, "text"),
                    thread=_optional(record, "thread"),
                    visibility=visibility,
                    directedness=str(record.get("directedness") or "ambient"),
                    mentions=_mentions(record),
                    in_reply_to=_optional(record, "inReplyTo"),
                    files=files_from_record(record.get("files")),
                    writing=bool(record.get("writing")),
                    person=_optional(record, "person"),
                )
            case "edit":
                return Edit(
                    **base,
                    message_id=_text(record, "messageId"),
                    text=_text(record, "text"),
                    thread=_optional(record, "thread"),
                    mentions=_mentions(record),
                    draft=bool(record.get("draft")),
                )
            case "delete":
                return Delete(
                    **base,
                    message_id=_text(record, "messageId"),
                    thread=_optional(record, "thread"),
                )
            case "react":
                signal = _optional(record, "signal")
                emoji = _optional(record, "emoji")
                if signal is None and emoji is None:
                    raise ValueError("it names neither a signal nor an emoji")
                placed = _placed(record.get("placed"))
                return React(
                    **base,
                    message_id=_text(record, "messageId"),
                    signal=Signal(signal) if signal is not None else None,
                    emoji=emoji,
                    placed=placed,
                    event_id=_optional(record, "eventId"),
                    eta=_optional(record, "eta"),
                )
            case "unreact":
                return Unreact(
                    **base,
                    message_id=_text(record, "messageId"),
                    signal=Signal(_text(record, "signal")),
                    event_id=_optional(record, "eventId"),
                )
            case "ask":
                return Ask(
                    **base,
                    request=_text(record, "request"),
                    text=_text(record, "text"),
                    choices=tuple(Choice(str(i), str(t), bool(a)) for i, t, a in record["choices"]),
                    thread=_optional(record, "thread"),
                    in_reply_to=_optional(record, "inReplyTo"),
                    message_id=_optional(record, "messageId"),
                    outcome=_optional(record, "outcome"),
                )
            case _:
                return _working(record, base, str(kind))
    except (ValueError, TypeError, KeyError) as exc:
        raise StoreError(f"outbox record {record.get('idempotencyKey')!r}: {exc}") from None


def _working(record: Mapping[str, Any], base: dict[str, Any], kind: str) -> Working:
    if kind == "typing":
        on = record.get("state") != "stop"
    elif kind == "status":
        on = bool(record.get("status"))
    else:
        on = bool(record.get("on"))
    timeout = record.get("timeoutSeconds")
    return Working(
        **base,
        on=on,
        status=str(record.get("status") or ""),
        thread=_optional(record, "thread"),
        in_reply_to=_optional(record, "inReplyTo"),
        message_id=_optional(record, "messageId"),
        conversation_kind=_optional(record, "conversationKind"),
        timeout_s=int(timeout) if isinstance(timeout, int) else WORKING_TIMEOUT_S,
    )


def _placed(value: object) -> frozenset[Signal] | None:
    if value is not None and not isinstance(value, list):
        raise ValueError("placed is not a list of signals")
    return None if value is None else frozenset(Signal(v) for v in value)


def _agent(record: Mapping[str, Any]) -> str:
    """The acting agent. Reactions the engine queued before it named one say it only in their
    key (`<eventId>:<agent>:react:<signal>`), and are read as that agent's."""
    if record.get("agent") or record.get("action") != "react":
        return _text(record, "agent")
    key, event_id = str(record.get("idempotencyKey") or ""), str(record.get("eventId") or "")
    agent = key.removeprefix(f"{event_id}:").partition(":react:")[0]
    if not event_id or not key.startswith(f"{event_id}:") or not agent:
        raise ValueError("it names no agent")
    return agent


def _visibility(value: Any) -> Visibility:
    for allowed in _VISIBILITIES:
        if value == allowed:
            return allowed
    raise ValueError(f"visibility {value!r} is not one of {', '.join(_VISIBILITIES)}")
