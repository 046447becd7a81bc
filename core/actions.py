"""What an agent or the host asks a platform to do: one small union of typed outbound actions.

Every action names the agent it is done as, the platform and conversation it goes to, and the
idempotency key (`key`) the outbox holds it under. The outbox stores an action as a record
(`to_record`, the camelCase mapping the outbox has always held, so rows written before read the
same) and hands each platform's sender the typed value back (`from_record`), which the sender
pattern-matches on:

    match action:
        case Post(): ...
        case Edit() | Delete(): ...
        case React(): ...
        case Working(): ...
        case Ask(): ...

`Working` is the "is working on it" indicator: each platform shows it its own way (a thread
status, typing), so the choice is the adapter's, not the caller's. Each class names its record
kind (`kind`: `send`, `edit`, `delete`, `react`, `working`), which is what counts and logs call
the action.

`Ask` is a message with choices (buttons) asking people to decide for an agent (an approval,
`core.approvals`): the same value posts it and, with `message_id` and `outcome`, redraws it
once decided, its choices gone. It is platform-free: each choice has an id, a label and
whether it lets the agent go ahead, so Slack renders Block Kit buttons, the web chat its own,
and a Discord sender components (a button per choice, `custom_id` from `choice_id`). A press
comes back to `core.approvals.Approvals.press` (`core.approvals.choice_id` names a button).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal

from core.errors import StoreError
from core.post_files import PostFile, files_from_record, files_record
from core.record_fields import mentions as _mentions
from core.record_fields import optional as _optional
from core.record_fields import text as _text
from core.signals import Signal

__all__ = [
    "Action",
    "Ask",
    "Choice",
    "Delete",
    "Edit",
    "Post",
    "React",
    "Visibility",
    "Working",
    "from_record",
    "reaction_key",
    "redacted",
    "to_record",
]

Visibility = Literal["dm", "thread", "channel", "ephemeral"]
_VISIBILITIES: tuple[Visibility, ...] = ("dm", "thread", "channel", "ephemeral")
WORKING_TIMEOUT_S = 120


@dataclass(frozen=True, slots=True, kw_only=True)
class _Addressed:
    """What every action names: the agent it is done as, the platform and conversation it
    goes to, and the idempotency key the outbox holds it under."""

    agent: str
    platform: str
    conversation: str
    key: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Post(_Addressed):
    """A new message. `mentions` are the recipients the agent chose to address
    (`agent:<id>`, `role:<name>`, `user:<platform id>`); nobody else is ever pinged. `files`
    go with it (`core.post_files`); its record holds them only when there are some."""

    kind: ClassVar[str] = "send"

    text: str
    thread: str | None = None
    visibility: Visibility = "thread"
    directedness: str = "ambient"
    mentions: tuple[str, ...] = ()
    in_reply_to: str | None = None
    files: tuple[PostFile, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Edit(_Addressed):
    """New text for a message the agent posted (`message_id`, the platform's id); a `draft`
    edit is a streamed reply still growing."""

    kind: ClassVar[str] = "edit"

    message_id: str
    text: str
    thread: str | None = None
    mentions: tuple[str, ...] = ()
    draft: bool = False


@dataclass(frozen=True, slots=True, kw_only=True)
class Delete(_Addressed):
    """Remove a message the agent posted."""

    kind: ClassVar[str] = "delete"

    message_id: str
    thread: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class React(_Addressed):
    """A typed signal on a message (`signal`), or a platform's own emoji name (`emoji`) when
    the host already knows it; `event_id` is the event the message is."""

    kind: ClassVar[str] = "react"

    message_id: str
    signal: Signal | None = None
    emoji: str | None = None
    event_id: str | None = None
    eta: str | None = None
    placed: frozenset[Signal] | None = None
    """The agent's statuses already on the message when the host knows them (none on a message
    it was just told of); None: the sender looks (`core.signals.taken_off`)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Working(_Addressed):
    """Show (`on`) or clear the working indicator for a turn answering `in_reply_to`
    (`message_id` its message) in `conversation`/`thread`; `status` is the words a platform
    that shows words shows; `timeout_s` is how long it may stay up unrenewed."""

    kind: ClassVar[str] = "working"

    on: bool
    status: str = ""
    thread: str | None = None
    in_reply_to: str | None = None
    message_id: str | None = None
    conversation_kind: str | None = None
    timeout_s: int = WORKING_TIMEOUT_S


@dataclass(frozen=True, slots=True)
class Choice:
    """One button of an `Ask`: its `id` (what a press sends back), the `label` people read,
    and whether choosing it lets the agent go ahead (`allow`; platforms colour it)."""

    id: str
    label: str
    allow: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class Ask(_Addressed):
    """A message with `choices` asking people to decide `request` (an approval's id), in reply
    to the event `in_reply_to`. With `message_id` and `outcome` it redraws that message once
    decided: the text and who decided what and when, and no choices."""

    kind: ClassVar[str] = "ask"

    request: str
    text: str
    choices: tuple[Choice, ...] = ()
    thread: str | None = None
    in_reply_to: str | None = None
    message_id: str | None = None
    outcome: str | None = None

    def as_post(self) -> Post:
        """The question as a post of its text: it goes where a reply to its event goes."""
        return Post(
            agent=self.agent,
            platform=self.platform,
            conversation=self.conversation,
            key=self.key,
            text=self.text,
            thread=self.thread,
            in_reply_to=self.in_reply_to,
        )


Action = Post | Edit | Delete | React | Working | Ask


# Every kind a record may name: the actions' own, and the indicator's older names.
_ACTIONS = (Post, Edit, Delete, React, Working, Ask)
_KINDS = frozenset({action.kind for action in _ACTIONS} | {"typing", "status"})


def redacted(action: Action, clean: Callable[[str], str]) -> Action:
    """The action with the words people will read (`text`, `status`, a file's content) passed
    through `clean`."""
    match action:
        case Post():
            files = tuple(PostFile(f.name, clean(f.content)) for f in action.files)
            return replace(action, text=clean(action.text), files=files)
        case Edit():
            return replace(action, text=clean(action.text))
        case Ask():
            outcome = clean(action.outcome) if action.outcome else action.outcome
            return replace(action, text=clean(action.text), outcome=outcome)
        case Working() if action.status:
            return replace(action, status=clean(action.status))
    return action


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


def reaction_key(decision_key: str, signal: Signal) -> str:
    """The outbox key of `signal` on the message a delivery (its `Decision.idempotency_key`)
    is about: `<eventId>:<agent>:react:<signal>`, one per signal, so a retry never reacts
    twice and a start can look one up."""
    return f"{decision_key}:react:{signal.value}"


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
