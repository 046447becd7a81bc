"""What a chat platform brings to c2a: the one port every adapter implements and registers.

Core names no platform. An adapter package exposes one `Platform` value through the entry
point group `c2a.adapters` (`PLATFORM_GROUP`); the composition root (`c2a/platforms.py`) loads
them and passes each piece down to where it is needed:

| field | who uses it |
|---|---|
| `normalise` | the host's receive path: a native payload becomes a `ChatEvent` (or None) |
| `repeats` | the host's receive path: a later copy of one event is known without normalising |
| `reactions` | `core.signals.glyph_map`: the platform's glyphs, emoji forms and stop glyphs |
| `manifest` | `core.manifest`: its manifest sections, validated and indexed by agent |
| `secrets` | `core.redact`: the shapes of its tokens and webhooks, found wherever pasted |
| `markup` | `core.intent`: how its text writes mentions, emoji, code and quotes (`core.markup`) |
| `connect` | `c2a run`: the live side (receiving, and the `Sender` the outbox sends through) |
| `streams_drafts` | the harnesses: a reply is shown as it is written, redrawn by draft edits |
| `draft_limit` | the harnesses: the most characters a streamed message grows to (None: no limit) |
| `forget` | `c2a prune`: retention of the chat's own record in the data directory, if any |

`connect` is given a `RunContext` (what one workspace's run has built) and returns a
`Connection`, or None when the workspace does not use the platform. It checks its settings
before returning (ManifestError, one line); nothing connects before `Connection.start`.

A platform whose chat c2a itself keeps (the web chat's history file) prunes it with the ledger:
its connection is also `KeepsRecord`, which a running host's retention calls, and its
`forget` does the same for a workspace whose run is stopped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from core.clock import Clock
from core.emission import Emission
from core.events import ChatEvent
from core.manifest_sections import ManifestSection
from core.markup import PLAIN_TEXT, Markup
from core.outbox import Sender
from core.redact import SecretShape
from core.signals import Reactions

if TYPE_CHECKING:
    from core.emission import Outcome
    from core.engine import Engine
    from core.manifest import Workspace
    from core.redact import Redactor
    from core.store import Store

__all__ = [
    "PLATFORM_GROUP",
    "Connection",
    "ConnectionFactory",
    "KeepsRecord",
    "Normaliser",
    "Platform",
    "Receive",
    "Repeats",
    "RunContext",
    "unchanged",
]

PLATFORM_GROUP = "c2a.adapters"

Normaliser = Callable[[Mapping[str, Any]], ChatEvent | None]
Receive = Callable[[str, Mapping[str, Any], str | None], Awaitable["Outcome | None"]]


def unchanged(event: ChatEvent, payload: Mapping[str, Any]) -> ChatEvent:
    """A copy's event is the earlier copy's, as it is (no copy says anything of its own)."""
    return event


@dataclass(frozen=True, slots=True)
class Repeats:
    """How the copies of one event a platform sends each agent's connection are known before
    normalising: the host normalises the first and reuses its event for the others.

    `key` reads a cheap key off a payload; two payloads with one key must normalise to the same
    event but for what each copy says of its own delivery, and a payload it is unsure of gets
    None (it is then normalised). It never raises. `restamp` gives the earlier copy's event
    what `payload`'s copy says of its own delivery (the bot it was made for, its delivery id)
    exactly as normalising `payload` would, raising `PayloadError` where normalising would."""

    key: Callable[[Mapping[str, Any]], str | None]
    restamp: Callable[[ChatEvent, Mapping[str, Any]], ChatEvent] = unchanged


class Connection(Protocol):
    """A platform's live side in one workspace's run.

    `start` connects and begins handing payloads to the run's `receive`; `close` stops taking
    events; `finish` releases what sending needed, after the outbox's last round. `sender` is
    what the outbox sends this platform's actions through (it may be None until started);
    `ready` is a line for the person at the terminal once everything has started, or None."""

    @property
    def sender(self) -> Sender | None: ...

    async def start(self) -> None: ...

    def ready(self) -> str | None: ...

    async def close(self) -> None: ...

    async def finish(self) -> None: ...


@dataclass(frozen=True, slots=True)
class RunContext:
    """What a workspace's run has built, for a platform's `connect`: the workspace, its engine,
        ledger and clock, the receive path, the environment (token variables), the redactor, the
        data directory, `options` a person gave on the command line, by name, and `sink`, where what
    the engine emits outside the receive path (`/c2a leave`'s cancellations) goes."""

    workspace: Workspace
    engine: Engine
    store: Store
    clock: Clock
    receive: Receive
    environ: Mapping[str, str]
    redactor: Redactor
    data_dir: Path
    options: Mapping[str, Any] = field(default_factory=dict)
    sink: Callable[[list[Emission]], Awaitable[None]] | None = None


@runtime_checkable
class KeepsRecord(Protocol):
    """A connection that is itself the record of what was said (the web chat's history):
    `forget` drops what happened before `before`, as retention drops the ledger's, and says
    how many messages went."""

    async def forget(self, before: datetime) -> int: ...


ConnectionFactory = Callable[[RunContext], Connection | None]


class Forget(Protocol):
    """`KeepsRecord.forget` for a workspace (by name) whose run is stopped, its record in the
    data directory; with `dry_run`, how many messages it would drop, dropping none."""

    def __call__(
        self, data_dir: Path, workspace: str, before: datetime, *, dry_run: bool = False
    ) -> int: ...


@dataclass(frozen=True, slots=True)
class Platform:
    """One platform adapter as core and the composition root see it (see the module doc)."""

    name: str
    normalise: Normaliser
    reactions: Reactions
    manifest: ManifestSection = field(default_factory=ManifestSection)
    secrets: tuple[SecretShape, ...] = ()
    markup: Markup = PLAIN_TEXT
    connect: ConnectionFactory | None = None
    streams_drafts: bool = False
    draft_limit: int | None = None
    repeats: Repeats | None = None
    forget: Forget | None = None
