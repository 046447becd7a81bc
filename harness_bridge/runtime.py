"""A built-in harness in the host's process: deliveries become turns, a model loop runs them.

It is a real C2A harness on an in-memory link, so the host treats it exactly like an external
one: `initialize`, `chat/deliver` acknowledged only once stored in its mailbox,
`notifications/cancelled` and `notifications/typing`. Stored events go through turn assembly on
the host's clock; a new event that starts a turn (`starts_turn`), for a conversation whose turn
is running, is injected into that turn (unless its author has fragments gathering there: it
joins them, so one person's message is never split over two turns), and any other waits for its
own path (mailbox, digest);
a completed turn that ends in text while it still owes an answer posts that text as its reply
(`ChatTools.reply_with_text`: the guarded `chat_send_message` path), and one that owes none
posts nothing and logs it; a finished turn that failed records the `failed` disposition with its
reason, and where it owed an answer, says so in chat (`core.drafts.TURN_FAILED`). A turn whose
model fails (unreachable, or broken) is tried again, with a growing wait, for as long as it owes
an answer, the agent marked unavailable meanwhile; one the model refuses fails after
`REFUSED_TRIES`. A running turn whose every event was cancelled (deleted, claimed by another
agent, left) is stopped: nothing is left for it to answer. An edit's cancellation (`superseded`)
does not stop one: the edited text joins the turn or starts the next. A `stop` (someone told the
agent to stop) stops every turn of its conversation, an answer being written included. Such a
turn is cancelled with `STOPPED`, so that an answer it was writing ends as stopped on the page;
a turn the host's shutdown cancels is not (`core.restart` finishes it at the next start).
Everything the harness does in chat, the working indicator included, goes through the agent's
port (`core.agent_port`); what it is told comes through a `core.deliveries.DeliveryPort`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter, deque
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any, Final, Protocol

from core.agent_port import AgentPort
from core.clock import Clock
from core.deliveries import DeliveryPort
from core.drafts import STOPPED, TURN_FAILED
from core.errors import ModelError, ModelRefusedTurn
from harness_bridge.backends.openai import TurnResult, record_failure, session_of
from harness_bridge.backends.stdio import HOST_CAPABILITIES, HOST_INFO
from harness_bridge.delivery import Deliverer
from harness_bridge.jsonrpc import ClientInfo
from harness_bridge.mailbox import Mailbox, serve_mailbox
from harness_bridge.rpc import Connection
from harness_bridge.session import accept_initialize, initialize
from harness_bridge.tools import ChatTools, ToolError
from harness_bridge.transport import MemoryTransport
from harness_bridge.turns import Assembler, Turn, starts_turn
from harness_bridge.wire import METHOD_CANCELLED, METHOD_TYPING
from harness_bridge.working import working

__all__ = ["InProcessHarness", "ModelLoop"]

log = logging.getLogger(__name__)

RETRY_S: Final = 5.0  # the first wait before a turn whose model failed is tried again
RETRY_MAX_S: Final = 60.0
REFUSED_TRIES: Final = 3  # a turn the model refuses (`ModelRefusedTurn`) this often fails
RESULTS_KEPT: Final = 64  # the latest finished turns kept to look at; `outcomes` counts all


class ModelLoop(Protocol):
    """What runs a turn: `run` answers it; `inject` adds an event to a running turn of the same
    conversation and says whether it could."""

    async def run(self, turn: Turn) -> TurnResult: ...

    def inject(self, params: dict[str, Any]) -> bool: ...


class InProcessHarness:
    """One agent's built-in harness. What it is told lives in this process's memory only
    (`mailbox_in_memory`): a start tells it again of what it never answered."""

    mailbox_in_memory = True

    def __init__(
        self,
        port: AgentPort,
        deliveries: DeliveryPort,
        loop: ModelLoop,
        clock: Clock,
        *,
        quiet_ms: int = 3000,
        mailbox: Mailbox | None = None,
        retry_after: float = RETRY_S,
    ) -> None:
        self.agent = port.agent
        self.port = port
        self.deliveries = deliveries
        self.loop = loop
        # Tools on the loop's own port share its send budget with the final text.
        self.tools = ChatTools(port)
        self.clock = clock
        self.assembler = Assembler(clock, quiet_ms=quiet_ms)
        self.mailbox = mailbox or Mailbox()
        self.results: deque[TurnResult] = deque(maxlen=RESULTS_KEPT)
        self.outcomes: Counter[str] = Counter()  # every finished turn, by status
        self.retry_after = retry_after
        # Each turn running: its session, and those of its events not cancelled since.
        self._turns: dict[asyncio.Task[None], tuple[str, set[str]]] = {}
        self._failing: set[int] = set()  # turns (by id) waiting to try a model that failed them
        self._stopping = False
        self._sessions: dict[str, tuple[asyncio.Lock, int]] = {}  # lock, turns holding or waiting
        self._changed = asyncio.Event()
        self._wake = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._host: Connection | None = None
        self._harness: Connection | None = None
        self.deliverer: Deliverer | None = None

    async def start(self) -> Deliverer:
        """Open the in-memory link and the session; returns the host's deliverer."""
        host_end, harness_end = MemoryTransport.pair()
        harness = Connection(harness_end, name="host")
        accept_initialize(
            harness, ClientInfo(name="c2a-builtin", version="0.1.0"), HOST_CAPABILITIES
        )
        serve_mailbox(harness, self.mailbox, on_new=self._arrived)
        harness.on_notification(METHOD_CANCELLED, self._cancelled)
        harness.on_notification(METHOD_TYPING, self._typing)
        host = Connection(host_end, name=self.agent)
        harness.start()
        host.start()
        session = await initialize(host, HOST_INFO, HOST_CAPABILITIES)
        self._host, self._harness = host, harness
        self.deliverer = Deliverer(self.agent, self.deliveries, host, session, woken=self._wake)
        self._tasks.append(asyncio.create_task(self._timer(), name=f"turns-{self.agent}"))
        return self.deliverer

    def wake(self) -> None:
        """New deliveries are pending for this agent."""
        self._wake.set()

    @property
    def running(self) -> int:
        """How many turns are running or waiting for their conversation's running turn."""
        return len(self._turns)

    async def run(self) -> None:
        """Start, then keep deliveries flowing into the harness until cancelled."""
        deliverer = await self.start()
        try:
            await deliverer.serve()
        finally:
            await self.stop()

    async def stop(self) -> None:
        """Stop every turn and the timer; no turn starts from now on (a gathering that closes
        while the timer ends would otherwise start one nobody stops)."""
        self._stopping = True
        for task in [*self._tasks, *self._turns]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._turns, return_exceptions=True)
        for connection in (self._host, self._harness):
            if connection is not None:
                await connection.close()

    async def idle(self) -> None:
        """Wait until nothing is gathering and no turn is running (for tests and shutdown)."""
        while self._turns or self.assembler.next_due() is not None:
            self._changed.clear()
            await self._changed.wait()

    # ---- from the host -----------------------------------------------------------------------

    def _arrived(self, params: dict[str, Any]) -> None:
        if params["attention"]["reason"] == "stop":
            # Told to stop: what runs in that conversation stops, an answer being written
            # too, and the stop is a turn of its own, never injected into the one it ends.
            self._stop_turns_in(session_of(params))
        elif (
            starts_turn(params)
            and not self.assembler.gathering(params)
            and self.loop.inject(params)
        ):
            return
        self._start(self.assembler.deliver(params))

    async def _cancelled(self, params: dict[str, Any] | None) -> None:
        if params and isinstance(params.get("eventId"), str):
            event_id, reason = params["eventId"], str(params.get("reason"))
            self.mailbox.cancel(event_id, reason)
            self.assembler.cancel(event_id, reason)
            self._drop(event_id, reason)
            self._poke()

    def _drop(self, event_id: str, reason: str) -> None:
        """A cancelled event leaves the running turns: one left with nothing to answer stops.
        An edit's (`superseded`) does not: the edited text joins the turn or starts the next."""
        if reason == "superseded":
            return
        for task, (_, left) in self._turns.items():
            if event_id in left:
                left.discard(event_id)
                if not left:
                    log.info("turn for %s stopped: every event it had was cancelled", self.agent)
                    task.cancel(STOPPED)

    def _stop_turns_in(self, session: str) -> None:
        for task, (where, _) in self._turns.items():
            if where == session:
                log.info("turn for %s stopped: told to stop", self.agent)
                task.cancel(STOPPED)

    async def _typing(self, params: dict[str, Any] | None) -> None:
        if params:
            self.assembler.typing(params["conversation"], params["authorId"], params["until"])
            self._poke()

    # ---- turns -------------------------------------------------------------------------------

    async def _timer(self) -> None:
        """Start each gathering's turn when its compose window closes on the clock."""
        while True:
            due = self.assembler.next_due()
            self._changed.clear()
            if due is None:
                await self._changed.wait()
                continue
            wait = (due - self.clock.now()).total_seconds()
            if wait > 0:
                # Not `wait_for`: on Python 3.11 it can swallow the cancellation that stops us
                # when the wait ends in the same turn of the loop, and `stop` would never end.
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(wait):
                        await self._changed.wait()
                continue
            self._start(self.assembler.due())

    def _start(self, turns: list[Turn]) -> None:
        if self._stopping:
            return
        for turn in turns:
            task = asyncio.create_task(self._run(turn))
            self._turns[task] = (session_of(turn.events[0]), set(turn.event_ids))
            task.add_done_callback(self._finished)
        self._poke()

    async def _run(self, turn: Turn) -> None:
        try:
            async with self._one_at_a_time(session_of(turn.events[0])):
                left = await self._still_said(turn)
                if left is None:
                    return
                result = await self._until_the_model_answers(left)
        except Exception as exc:  # a bug, or what nothing foresaw: failed, and the asker told
            log.error("turn for %s failed on %s", self.agent, _named(exc), exc_info=True)
            result = _failed(turn, _named(exc))
        if result is None:
            return
        self.results.append(result)
        self.outcomes[result.status] += 1
        if result.status == "failed":
            owed = await self.port.owed(result.failed)
            await record_failure(self.port, result)
            if owed:
                await self._say_it_failed(owed)

    @contextlib.asynccontextmanager
    async def _one_at_a_time(self, session: str) -> AsyncIterator[None]:
        """One turn at a time per conversation: the next waits for the one running there. The
        conversation's lock goes when no turn holds or waits for it (a host that talks in
        thousands of DMs over months keeps none of theirs)."""
        lock, waiting = self._sessions.get(session, (asyncio.Lock(), 0))
        self._sessions[session] = (lock, waiting + 1)
        try:
            async with lock:
                yield
        finally:
            lock, waiting = self._sessions[session]
            if waiting > 1:
                self._sessions[session] = (lock, waiting - 1)
            else:
                del self._sessions[session]

    async def _still_said(self, turn: Turn) -> Turn | None:
        """The turn without the events that ended for the agent while it gathered or waited
        (edited, deleted, handed over, answered by another) though no cancellation came: the
        host in another process took the change, or the cancellation was dropped. None when
        nothing is left."""
        gone = set(await self.port.superseded(turn.event_ids))
        if not gone:
            return turn
        left = tuple(params for params in turn.events if params["eventId"] not in gone)
        log.info("turn for %s: %d of its events ended before it started", self.agent, len(gone))
        return replace(turn, events=left) if left else None

    async def _until_the_model_answers(self, turn: Turn) -> TurnResult | None:
        """Run the turn; while its model fails (`ModelError`: unreachable, or answering with
        something that is not an answer) and the turn still owes an answer, try again after a wait
        that doubles up to `RETRY_MAX_S`, the agent marked unavailable meanwhile (its new questions
        get `blocked`, and its people a notice: `core.followup`). A model that is up but refuses
        this turn (`ModelRefusedTurn`, `REFUSED_TRIES` times in a row) fails it instead
        (`_give_up`): one question the model cannot take never holds its agent down. None when
        nothing is owed any more; a failure then marks nothing (a model that failed halfway through
        an answer, which was then finished as cut short, is tried by the next turn, not held down
        with no turn to find it up again). For the same reason, a turn that marked the agent
        unavailable and ends owing nothing (handed over, deleted, stopped) marks it available again
        unless another of its turns is still trying: the next turn finds out."""
        wait, refused = self.retry_after, 0
        try:
            while True:
                await working(self.port, turn.events, on=True)
                try:
                    result = await self.loop.run(turn)
                    if result.status == "completed":
                        await self._reply(result)
                except ModelError as exc:
                    if not await self.port.owed(turn.event_ids):
                        log.warning("turn for %s did not run: %s", self.agent, exc)
                        return None
                    refused = refused + 1 if isinstance(exc, ModelRefusedTurn) else 0
                    if refused >= REFUSED_TRIES:
                        return self._give_up(turn, exc)
                    self._failing.add(id(turn))
                    self.port.mark_unavailable()
                    log.warning("turn for %s: %s; trying again in %.0f s", self.agent, exc, wait)
                else:
                    self._failing.clear()
                    self.port.mark_available()
                    return result
                finally:
                    await working(self.port, turn.events, on=False)
                await asyncio.sleep(wait)
                wait = min(wait * 2, RETRY_MAX_S)
        finally:
            if id(turn) in self._failing:
                self._failing.discard(id(turn))
                if not self._failing:
                    self.port.mark_available()

    def _give_up(self, turn: Turn, exc: ModelError) -> TurnResult:
        """The model refused the turn `REFUSED_TRIES` times: it fails with the model's reason."""
        log.warning("turn for %s: %s; given up after %d tries", self.agent, exc, REFUSED_TRIES)
        return _failed(turn, str(exc))

    async def _say_it_failed(self, owed: Sequence[str]) -> None:
        """A failed turn owed these answers: its people are told where they asked (`TURN_FAILED`,
        a post that answers nothing), rather than left waiting for what will not come."""
        place = await self.port.final_reply(owed, TURN_FAILED)
        if place is None:
            return
        target = {"conversation": place.conversation, "thread": place.thread}
        key = f"failed:{self.agent}:{owed[-1]}"
        arguments = {"target": target, "text": TURN_FAILED, "idempotencyKey": key}
        try:
            await self.tools.call("chat_send_message", arguments)
        except ToolError as refusal:
            log.warning("%s could not say its turn failed: %s", self.agent, refusal)

    async def _reply(self, result: TurnResult) -> None:
        """A completed turn's final text is its reply when the turn still owes one; otherwise
        it is only logged as not posted (its length, never the text)."""
        if not result.text.strip():
            return
        try:
            sent = await self.tools.reply_with_text(result.event_ids, result.text)
        except ToolError as exc:
            log.warning("turn for %s ended in text; its reply was refused: %s", self.agent, exc)
            return
        if sent is None:
            log.info(
                "turn for %s ended in text (%d characters) but owed no reply: nothing posted",
                self.agent,
                len(result.text),
            )

    def _finished(self, task: asyncio.Task[None]) -> None:
        self._turns.pop(task, None)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("turn for %s ended with an error: %s", self.agent, exc, exc_info=exc)
        self._poke()

    def _poke(self) -> None:
        self._changed.set()


def _failed(turn: Turn, reason: str) -> TurnResult:
    """`turn` failed, every event of it, for `reason`."""
    ids = tuple(turn.event_ids)
    return TurnResult(session_of(turn.events[0]), "failed", ids, ids, reason)


def _named(exc: Exception) -> str:
    """An exception as a reason: its type, and its text when it has one."""
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
