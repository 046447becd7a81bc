"""What an agent or the host asks a platform to do: one small union of typed outbound actions.

Every action names the agent it is done as, the platform and conversation it goes to, and the
idempotency key (`key`) the outbox holds it under. The outbox stores an action as a record
(`core.action_records`) and hands each platform's sender the typed value back, which the sender
pattern-matches on:

    match action:
        case Post(): ...
        case Edit() | Delete(): ...
        case React() | Unreact(): ...
        case Working(): ...
        case Ask(): ...

`Working` is the "is working on it" indicator: each platform shows it its own way (a thread
status, typing), so the choice is the adapter's, not the caller's. `Unreact` takes one of the
agent's signals off a message without putting another there (a `blocked` whose question went
to another agent, or whose agent is back where the workspace shows no `seen`). Each class names
its record kind (`kind`: `send`, `edit`, `delete`, `react`, `unreact`, `working`, `ask`), which
is what counts and logs call the action.

`Ask` is a message with choices (buttons) asking people to decide for an agent (an approval,
`core.approvals`): the same value posts it and, with `message_id` and `outcome`, redraws it
once decided, its choices gone. It is platform-free: each choice has an id, a label and
whether it lets the agent go ahead, so Slack renders Block Kit buttons, the web chat its own,
and a Discord sender components (a button per choice, `custom_id` from `choice_id`). A press
comes back to `core.approvals.Approvals.press` (`core.approvals.choice_id` names a button).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import ClassVar, Literal

from core.post_files import PostFile
from core.signals import Signal

__all__ = [
    "Action",
    "Ask",
    "Choice",
    "Delete",
    "Edit",
    "Post",
    "React",
    "Unreact",
    "Visibility",
    "Working",
    "private_person",
    "reaction_key",
    "redacted",
    "user_ids",
]

Visibility = Literal["dm", "thread", "channel", "ephemeral"]
WORKING_TIMEOUT_S = 120


def user_ids(recipients: Iterable[str]) -> tuple[str, ...]:
    """The platform ids of the `user:` recipients among `recipients`, in order: whom a DM or
    an ephemeral post is for."""
    return tuple(r.partition(":")[2] for r in recipients if r.startswith("user:"))


def private_person(recipients: Iterable[str], asker: str | None) -> str | None:
    """Whom a private post is for: its first `user:` recipient, else the author of the message
    it answers (`asker`); None when it names neither."""
    users = user_ids(recipients)
    return users[0] if users else asker


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
    go with it (`core.post_files`); its record holds them only when there are some. `writing`
    marks the first words of a reply still being written (`core.drafts`). `person` is the
    platform id of the one person a private post (`ephemeral`, or `dm` from outside a DM) is
    for, named by the host (`core.guards.check_audience`): a platform delivers it to them and
    chooses no one itself."""

    kind: ClassVar[str] = "send"

    text: str
    thread: str | None = None
    visibility: Visibility = "thread"
    directedness: str = "ambient"
    mentions: tuple[str, ...] = ()
    in_reply_to: str | None = None
    files: tuple[PostFile, ...] = ()
    writing: bool = False
    person: str | None = None


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
class Unreact(_Addressed):
    """Take the agent's `signal` reaction off a message (`message_id`; `event_id` the event it
    is); done already when it is not there."""

    kind: ClassVar[str] = "unreact"

    message_id: str
    signal: Signal
    event_id: str | None = None


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


Action = Post | Edit | Delete | React | Unreact | Working | Ask


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


def reaction_key(decision_key: str, signal: Signal) -> str:
    """The outbox key of `signal` on the message a delivery (its `Decision.idempotency_key`)
    is about: `<eventId>:<agent>:react:<signal>`, one per signal, so a retry never reacts
    twice and a start can look one up."""
    return f"{decision_key}:react:{signal.value}"
