"""A reply that appears as the model writes it: posted at its first words, redrawn in place as
it grows, finished with the whole text, continued in a new message when it outgrows one.

Every step goes through the agent's port (`core.agent_port`), which guards it. The first words
are posted by `ChatTools.reply_with_text` (policy, claims, send budget, idempotency key,
audit); the caller's `on_posted` runs then (the harness clears its working indicator). While
the model writes, the message is redrawn by *draft* edits (`AgentPort.edit` with a draft
number): outbox `edit` actions marked `draft`, which the platform shows on the page only, so
the ledger never holds the half-written versions. A message's whole text is its one real edit
(`chat_edit_message`), recorded like any edit, once its post has landed; a reply written
before its first post was queued is simply posted whole. A draft or an edit that fails is only
logged: an edit never posts a message.

The pace of the redraws is decided here, and only here, for every platform: at most one draft
per `every` seconds (one a second) on a message, and only once the one before it has landed.
A draft found still unsent when the next is due (the outbox is behind) or given up (a
platform's sender drops a draft the platform answered 429: the next redraw replaces it) halves
the pace, down to one redraw per `SLOWEST_EVERY_S`, counted from then; each draft that lands in
time brings it back towards `every`. The final edit keeps the same distance from the last draft.

A message is never drawn past its platform's limit (`limit`, from
`core.platform.Platform.draft_limit`), nor past what the tools take (`MAX_MESSAGE_CHARS`, for a
platform with no limit of its own, or a model server that writes on past the tokens asked): when
the text outgrows it, the message is finished with the text up to the last line or word end that
fits (`cut`), and the rest continues in a new message (`chat_send_message` in the same
conversation and thread, keyed after the first message, so a retry is recognised), which is
streamed the same way. A code block open where the message ends is closed there and reopened,
with its language, at the start of the next (`harness_bridge.fences`); a message never ends on
the line that opens a block. A message finished as a whole has the block it leaves open
closed, so an answer cut at the model's token bound never turns the rest of the page into code.

A reply is never drawn over more messages than the workspace allows an answer before it goes
as a file (`parts`, else `AgentPort.answer_parts`, the rule of `core.post_files.long_answer`):
when the last of them outgrows the limit, it is finished with what fits and `REST_AS_FILE`, the
reply stops showing, and once the model is done the whole answer is sent as `answer.md`
(`chat_send_message` with a file, keyed after the first message, in its place).

While a message is still being written, what the page shows of it (its first post and each
draft) ends with `WRITING` (`core.drafts`), a mark its final edit takes away, and its post is
recorded as `writing`: a reply cut
short, by a crash or a kill of the process, is left on the page marked as unfinished, never
passing for a whole answer, until the next start finishes it as cut and asks again
(`core.restart`). One the running process stops (the model failed, the turn was stopped) is
finished at once with what was written and a note saying so (`cut_short`).
The ledger keeps what was recorded: the post, marked, and the final edit when there is one.

A model that falls into a loop (the same words again and again, `harness_bridge.repetition`)
is cut where the loop begins: the reply keeps one copy, and what it writes after is dropped.
A reply that is nothing but a line leading in to more (`leads_in_only`: "The answer to your
question is:", what a loop cut leaves of that line written over and over) is no answer: it is
finished with the fallback (`finish`) instead.

Only a platform that takes drafts streams (it says so: `core.platform.Platform.streams_drafts`,
passed down by the composition root); elsewhere the whole text is posted at the end.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Final

from core.drafts import WRITING
from core.post_files import ANSWER_NAME
from harness_bridge.fences import CLOSE, FENCE, fences_closed, open_fence
from harness_bridge.repetition import loop_start
from harness_bridge.tools import MAX_MESSAGE_CHARS, ChatTools, ToolError

__all__ = [
    "AS_FILE",
    "EDIT_EVERY_S",
    "REST_AS_FILE",
    "SLOWEST_EVERY_S",
    "WRITING",
    "StreamedReply",
    "cut",
    "leads_in_only",
]

log = logging.getLogger(__name__)

EDIT_EVERY_S: Final = 1.0  # at most one redraw a second per message
SLOWEST_EVERY_S: Final = 8.0  # the slowest pace a rate-limited message backs off to
LANDED_WITHIN_S: Final = 30.0  # how long an edit waits for what it follows to land
REST_AS_FILE: Final = "\n\n(The rest follows as a file.)"
AS_FILE: Final = "The whole answer:"
_POLL_S: Final = 0.05
_LANDED: Final = frozenset({"sent", "failed"})


def cut(text: str, limit: int, keep: int = 0) -> tuple[str, int]:
    """`text`'s head of at most `limit` characters, ended at its last line end, else its last
    space, else at `limit`, and holding more than its first `keep` characters; and where the
    rest starts in `text`."""
    window = text[: limit + 1]
    for mark in ("\n", " "):
        at = window.rfind(mark, keep, limit + 1)
        if at > keep and text[keep:at].strip():
            return text[:at].rstrip(), at + 1
    return text[:limit], limit


def leads_in_only(text: str) -> bool:
    """Whether `text` is one line that leads in to more and stops there ("The answer to your
    question is:"): what a loop cut leaves of a lead-in written over and over, or a model that
    stopped after its lead-in."""
    line = text.strip()
    return line.endswith(":") and "\n" not in line


def _head(body: str, room: int, keep: int) -> tuple[str, int]:
    """`cut`, where a message's head never ends on the line that opens a code block: that line
    goes on to the next message, with its block."""
    head, rest_at = cut(body, room, keep)
    line_at = head.rfind("\n") + 1  # where its last line starts
    opens = open_fence(head) is not None and open_fence(head[:line_at]) is None
    if opens and line_at > keep and head[keep:line_at].strip():
        return head[:line_at].rstrip(), line_at
    return head, rest_at


def _reopening(fence: str | None, limit: int) -> str:
    """How the next message starts so that it goes on inside the block `fence` opened: the
    fence again; bare if with its language it would take more than a quarter of what a message
    holds, nothing if even that would."""
    room = limit - len(REST_AS_FILE) - len(CLOSE)
    for opening in (f"{fence}\n", f"{FENCE}\n") if fence else ():
        if len(opening) * 4 <= room:
            return opening
    return ""


class StreamedReply:
    """One turn's reply to `event_ids`, fed the model's text piece by piece (`add`), then
    `finish`ed. `live` streams it (a platform that takes drafts); otherwise only `finish`
    posts. `parts` is how many messages it may take before it goes as a file (None: the
    port's `answer_parts`). `now` and `sleep` are the clock it paces by."""

    def __init__(
        self,
        tools: ChatTools,
        event_ids: Sequence[str],
        *,
        live: bool,
        limit: int | None = None,
        parts: int | None = None,
        every: float = EDIT_EVERY_S,
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        on_posted: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.tools = tools
        self.port = tools.port
        self.on_posted = on_posted
        self.event_ids = list(event_ids)
        self.live = live
        self.limit = min(limit or MAX_MESSAGE_CHARS, MAX_MESSAGE_CHARS)
        self.parts = parts if parts is not None else tools.port.answer_parts
        self.as_file = False  # the reply stopped at `parts` messages; it goes as a file
        self.every = every
        self.now = now
        self.sleep = sleep
        self.text = ""
        self.looped = False  # the model fell into a loop: the rest of its text is dropped
        self.keys: list[str] = []  # every message of the reply, in order
        self.key: str | None = None  # the message being drawn
        self.drafts = 0
        self.gap = every  # the pace now: `every`, or slower after a draft was held up
        self._start = 0  # where the message being drawn starts in `text`
        self._reopened = ""  # what it starts with: the code block the one before left open
        self._place: tuple[str, str | None] | None = None  # conversation, thread
        self._posted = ""  # the text of the message's post, as recorded
        self._shown = ""  # the text on the page, drafts included, without the mark
        self._latest: str | None = None  # the key of the last draft queued
        self._last = 0.0

    async def add(self, piece: str) -> None:
        """More of the model's text; posts, redraws or continues when it is time. Once the
        text ends in a loop (`loop_start`), it keeps one copy and takes nothing more."""
        if self.looped:
            return
        self.text += piece
        if (start := loop_start(self.text)) is not None:
            self.text, self.looped = self.text[: max(start, self._start)], True
            log.info("the reply of %s repeated itself: cut at the loop", self.tools.agent)
        if not self.live:
            return
        await self._continue_past_limit()
        current = self._drawn()
        if not self.live or not current:
            return
        if self.key is None:
            await self._post(current, writing=True)
        elif self.now() - self._last >= self.gap:
            await self._draft(current)

    async def finish(self, fallback: str) -> str | None:
        """Post or complete the reply with the whole text (`fallback` if the model wrote
        nothing); returns its first message's idempotency key, None when nothing was posted."""
        if not self.keys:
            self.live = True  # nothing is shown yet: what is too long is split as if streamed
        if len(self.keys) <= 1 and leads_in_only(self.text):
            self.text, self._start = fallback, 0  # "The answer is:" and no answer: none
        await self._continue_past_limit()
        if self.as_file:
            return await self._as_file()
        final = fences_closed(self._drawn()) or ("" if self.keys else fallback)
        if self.key is None:
            if final:
                await self._post(final)
        elif final and final != self._posted:
            await self._final_edit(final)
        return self.keys[0] if self.keys else None

    async def cut_short(self, note: str) -> None:
        """The model stopped before the end (it failed, or the turn was stopped): the message
        being drawn is finished with what was written and `note` (`core.drafts`), so it never
        stays marked as still being written. Nothing is posted that was not shown yet."""
        if self.key is None:
            return
        written = self._drawn()
        if len(fences_closed(written)) + len(note) > self.limit:
            written = cut(written, self.limit - len(note) - len(CLOSE))[0]
        await self._final_edit(fences_closed(written) + note)

    async def _continue_past_limit(self) -> None:
        """While the message being drawn has outgrown the limit: finish it with what fits,
        and go on with the rest in a new message."""
        while self.live:
            current = self.text[self._start :]
            lead = len(current) - len(current.lstrip())
            body = self._reopened + current[lead:]
            if len(fences_closed(body.rstrip())) <= self.limit:
                return
            last = len(self.keys) + (self.key is None) >= self.parts
            note = REST_AS_FILE if last else ""
            head, rest_at = _head(body, self.limit - len(note) - len(CLOSE), len(self._reopened))
            shown = fences_closed(head) + note
            if self.key is None:
                await self._post(shown)
            elif shown != self._posted:
                await self._final_edit(shown)
            self._start += lead + rest_at - len(self._reopened)
            self._reopened = _reopening(open_fence(head), self.limit)
            self.key = None
            if last and self.keys:
                self.as_file, self.live = True, False

    def _drawn(self) -> str:
        """The message being drawn, as the model has written it so far: the block the message
        before left open reopened, then the text since; empty before the model wrote any."""
        rest = self.text[self._start :].strip()
        return self._reopened + rest if rest else ""

    async def _as_file(self) -> str:
        """The whole answer as `answer.md`, after the messages that showed its start."""
        file = {"name": ANSWER_NAME, "content": self.text.strip()}
        await self._more(AS_FILE, key=f"{self.keys[0]}:file", files=[file])
        return self.keys[0]

    async def _post(self, text: str, *, writing: bool = False) -> None:
        """Post `text` as the reply's next message, marked as still being written when
        `writing`."""
        shown = text + WRITING if writing else text
        if self.keys:
            sent = await self._more(shown, writing=writing)
        else:
            self._place = await self._where(text)
            sent = await self._first(shown, writing=writing)
        if sent is None:
            self.live = False  # nothing to redraw; `finish` will try once more, whole
            return
        self.key = sent
        self.keys.append(sent)
        self._posted, self._shown = shown, text
        self._latest, self._last = sent, self.now()
        if self.on_posted is not None and len(self.keys) == 1:
            await self.on_posted()

    async def _where(self, text: str) -> tuple[str, str | None] | None:
        reply = await self.port.final_reply(self.event_ids, text)
        return None if reply is None else (reply.conversation, reply.thread)

    async def _first(self, text: str, *, writing: bool) -> str | None:
        try:
            sent = await self.tools.reply_with_text(self.event_ids, text, writing=writing)
        except ToolError as exc:
            log.warning("reply of %s refused: %s", self.tools.agent, exc)
            return None
        return None if sent is None else str(sent["idempotencyKey"])

    async def _more(
        self,
        text: str,
        *,
        key: str | None = None,
        files: list[dict[str, str]] | None = None,
        writing: bool = False,
    ) -> str | None:
        """A continuation (or the answer as a file, `files`, under `key`): in the conversation
        and thread the first message landed in."""
        first = self.keys[0]
        if self._place is None or not await self._landed(first):
            log.warning(
                "the reply of %s was cut short: its first part never landed", self.tools.agent
            )
            return None
        state = await self.port.message(first)
        conversation, thread = self._place
        target = {"conversation": conversation, "thread": (state and state.thread) or thread}
        key = key or f"{first}:part:{len(self.keys) + 1}"
        arguments: dict[str, object] = {"target": target, "text": text, "idempotencyKey": key}
        if files:
            arguments["files"] = files
        try:
            await self.tools.send_part(arguments, writing=writing)
        except ToolError as exc:
            log.warning("the reply of %s was cut short: %s", self.tools.agent, exc)
            return None
        return key

    async def _draft(self, shown: str) -> None:
        if shown == self._shown or self.key is None:
            return
        state = await self.port.message(self.key)
        if state is None or state.status != "sent" or not state.message_id:
            return  # not on the page yet: the next piece tries again
        held = await self._status(self._latest) if self._latest != self.key else "sent"
        if held != "sent":  # still unsent, or given up (a 429): slow down, from now
            self.gap = min(self.gap * 2, SLOWEST_EVERY_S)
            self._last = self.now()
            if held == "failed":
                self._latest = self.key  # counted once
            return
        self.gap = max(self.every, self.gap / 2)
        self.drafts += 1
        queued = await self.port.edit(self.key, shown + WRITING, draft=self.drafts)
        self._shown, self._latest, self._last = shown, queued.key, self.now()

    async def _final_edit(self, final: str) -> None:
        """The whole text as the message's one recorded edit, once its post and its last
        draft have landed, and not sooner after that draft than the pace allows."""
        assert self.key is not None
        await self._landed(self.key)
        if self._latest not in (None, self.key):
            await self._landed(self._latest)
            wait = self._last + self.gap - self.now()
            if wait > 0:
                await self.sleep(wait)
        try:
            await self.tools.call("chat_edit_message", {"idempotencyKey": self.key, "text": final})
        except ToolError as exc:
            log.warning("the reply of %s was left unfinished: %s", self.tools.agent, exc)
            return
        self._posted = self._shown = final
        self._last = self.now()

    async def _status(self, key: str | None) -> str:
        state = None if key is None else await self.port.message(key)
        return "sent" if state is None else state.status

    async def _landed(self, key: str) -> bool:
        """Waits up to `LANDED_WITHIN_S` for the action under `key` to be sent (or to fail);
        whether it was."""
        deadline = self.now() + LANDED_WITHIN_S
        while await self._status(key) not in _LANDED:
            if self.now() >= deadline:
                return False
            await self.sleep(_POLL_S)
        return True
