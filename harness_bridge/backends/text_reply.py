"""The text reply path: a model loop for a model too small for the tool protocol
(`harness: {reply: text}`, the `local` backend's default).

The model is never asked to choose a tool. The host's policy decides what a turn owes:

- an event that owes an answer (`AgentPort.owed`: `must_respond`, or `may_respond` with this
  agent holding its claim) always gets one;
- a `may_respond` event nobody holds is put to the model as a yes/no question whose answer is
  constrained to exactly `yes` or `no` (`TextModel.choose`, a grammar or a schema, never free
  text read for a meaning); yes claims the event, so the answer is owed and only one agent gives
  it. With `volunteers: always` the host's judgement stands and the event is claimed without
  asking, unless nobody named the agent or its role (a line in a thread it follows names
  neither) and it asks nothing (`asks`: a question, or a line to anyone, "anyone know..."):
  the bundled SmolLM2-135M answers `no` to every such question, "what is 2 + 2?" to it by name
  included, and its two answers' scores do not tell the cases apart; and it answers a
  statement ("the weather is nice today") by saying it again;
- an `ack_only` event gets a `seen` reaction; anything else (ambient, `must_not_respond`) nothing.

For an answer the model gets a short prompt (`harness_bridge.prompt.text_messages`): the recent
messages this agent was shown in that conversation (the ledger's deliveries to it, which is what
the attention policy let it see), each once as it reads now, and the new ones (a line whose
words the host withheld, a `notify` knock, as the ledger gives it to the agent). Its text is
streamed into the chat (`StreamedReply`) through the guarded send path. Every turn completes
with no `text`: the reply is already posted, so the harness posts nothing more. An answer the
model stops writing halfway (it fails, or the runtime stops the turn: `STOPPED`) is finished at
once with what was written and a note saying why (`StreamedReply.cut_short`); a turn cancelled
by the host's shutdown is left to the next start (`core.restart`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any, Final, Literal, Protocol

from core.agent_port import EventView
from core.continuity import asks_the_room
from core.decision import Directedness, Policy
from core.drafts import CUT_SHORT, MODEL_FAILED, STOPPED, TURN_FAILED, WRITING
from core.errors import ModelError
from core.intent import DEFAULT_RULES
from core.intent_tables import Intent
from core.notices import is_notice
from harness_bridge.backends.openai import TurnResult, session_of
from harness_bridge.prompt import choice_messages, plain_line, text_messages
from harness_bridge.streamed_reply import StreamedReply
from harness_bridge.tools import ChatTools, ToolError
from harness_bridge.turns import Turn
from harness_bridge.wire import parse_deliver

__all__ = ["FALLBACK", "TextModel", "TextReplyLoop", "Volunteers", "asks"]

log = logging.getLogger(__name__)

RECENT_LINES: Final = 6
READ_BACK: Final = 4 * RECENT_LINES
"""Events read back for them: a question and its answer are often four (the question, its
`seen` reaction, the answer's post and the edit that finished it)."""
MAX_ANSWER_TOKENS: Final = 120
FALLBACK: Final = "Sorry, I have no answer to that."
_SAID: Final = frozenset({"message", "edit"})
_NAMED: Final = frozenset({Directedness.TO_ME, Directedness.TO_MY_ROLE})
# Reasons that are `to_me` or `to_my_role` with no words naming the agent: a line in a thread it
# is in, and a 👍 or 🙅 on its message (a model with tools proceeds or revises; one that can only
# write has nothing to add to a reaction).
_NOT_NAMING: Final = frozenset({"thread_participant", "signal_agree", "signal_declined"})
_EDITED: Final = frozenset({"edited_before_injection", "edited_after_response"})
_UNFINISHED: Final = (WRITING, CUT_SHORT, MODEL_FAILED, STOPPED)  # what ends an unfinished answer
Volunteers = Literal["ask", "always"]


class TextModel(Protocol):
    """A model asked for plain answers. `stream_text` returns the answer to `messages`, giving
    each piece to `on_text` as it is written, at most `max_tokens` long; `choose` returns
    exactly one of `options`, the model constrained to write nothing else. Both raise
    ModelError; cancelling either stops the model's work."""

    async def stream_text(
        self,
        messages: Sequence[Mapping[str, Any]],
        on_text: Callable[[str], Awaitable[None]],
        *,
        max_tokens: int,
    ) -> str: ...

    async def choose(
        self, messages: Sequence[Mapping[str, Any]], options: Sequence[str]
    ) -> str: ...

    async def aclose(self) -> None: ...


Cleared = Callable[[tuple[dict[str, Any], ...]], Awaitable[None]]


class TextReplyLoop:
    """One agent's turns on the text path (a `ModelLoop`). `cleared(events)` takes a turn's
    working indicator down once its answer starts to show; an answer on one of the `streaming`
    platforms (those that take drafts) shows as it is written, each message growing to at most
    the platform's `limits` before the answer continues in a new one."""

    def __init__(
        self,
        tools: ChatTools,
        model: TextModel,
        cleared: Cleared | None = None,
        *,
        streaming: frozenset[str] = frozenset(),
        limits: Mapping[str, int] | None = None,
        volunteers: Volunteers = "ask",
    ) -> None:
        self.agent = tools.agent
        self.volunteers = volunteers
        self.port = tools.port
        self.tools = tools
        self.model = model
        self.cleared = cleared
        self.streaming = streaming
        self.limits = dict(limits or {})

    async def aclose(self) -> None:
        await self.model.aclose()

    def inject(self, params: dict[str, Any]) -> bool:
        """Never: a turn here is one short generation; the next event waits for its own."""
        return False

    async def run(self, turn: Turn) -> TurnResult:
        """Answer, react or stay quiet, as the policy (and, for `may_respond`, the model's
        yes or no) says. Raises ModelError when the model fails."""
        key, ids = session_of(turn.events[0]), tuple(turn.event_ids)
        seen = await self._seen(turn)
        said = {e["eventId"]: _said(e, seen) for e in turn.events}
        owed = await self.port.owed(ids)
        if not owed and await self._volunteers(turn, seen, said):
            owed = await self.port.owed(ids)
        if owed:
            await self._answer(turn, seen, said)
        else:
            await self._acknowledge(turn)
        return TurnResult(key, "completed", ids)

    async def _seen(self, turn: Turn) -> list[EventView]:
        """The recent events where the turn is, as this agent was shown them, the turn's own
        included."""
        first = turn.events[0]["conversation"]
        limit = READ_BACK + len(turn.events)
        return await self.port.read_thread(first["id"], thread=first.get("threadId"), limit=limit)

    async def _volunteers(
        self, turn: Turn, seen: Sequence[EventView], said: Mapping[str, str]
    ) -> bool:
        """Whether the agent takes an open `may_respond` event: the model asked yes or no
        (with `volunteers: always`, taken without asking), and on yes it claims the event
        (False when another agent has it). One the agent has settled (it was handed to another
        agent, edited or deleted while the harness was away) is not open: nothing is asked."""
        maybe = [e for e in turn.events if _policy(e) is Policy.MAY_RESPOND]
        if self.volunteers == "always":
            maybe = [
                e
                for e in maybe
                if _named(e, self.agent) or asks(said[e["eventId"]], e["source"]["platform"])
            ]
        unsettled = set(await self.port.unsettled([e["eventId"] for e in maybe]))
        open_ = [e for e in maybe if e["eventId"] in unsettled]
        if not open_:
            return False
        if self.volunteers == "ask":
            recent, new = self._lines(turn, seen, said)
            messages = choice_messages(self.agent, recent, new)
            if await self.model.choose(messages, ("yes", "no")) != "yes":
                return False
        try:
            claimed = await self.tools.call("chat_claim", {"eventId": open_[-1]["eventId"]})
        except ToolError as exc:
            log.info("%s did not claim %s: %s", self.agent, open_[-1]["eventId"], exc)
            return False
        return bool(claimed.get("claimed"))

    async def _answer(self, turn: Turn, seen: Sequence[EventView], said: Mapping[str, str]) -> None:
        recent, new = self._lines(turn, seen, said)
        platform = turn.events[-1]["source"]["platform"]
        cleared = self.cleared
        on_posted = partial(cleared, turn.events) if cleared is not None else None
        reply = StreamedReply(
            self.tools,
            turn.event_ids,
            live=platform in self.streaming,
            limit=self.limits.get(platform),
            on_posted=on_posted,
        )
        try:
            await self.model.stream_text(
                text_messages(self.agent, recent, new), reply.add, max_tokens=MAX_ANSWER_TOKENS
            )
        except ModelError:
            await reply.cut_short(MODEL_FAILED)
            raise
        except asyncio.CancelledError as stopped:
            if stopped.args == (STOPPED,):  # the runtime's word: stopped, not shut down
                await reply.cut_short(STOPPED)
            raise
        await reply.finish(FALLBACK)

    async def _acknowledge(self, turn: Turn) -> None:
        """A `seen` reaction on each `ack_only` event; nothing on any other."""
        for event in turn.events:
            if _policy(event) is not Policy.ACK_ONLY:
                continue
            try:
                await self.tools.call(
                    "chat_react", {"inReplyTo": event["eventId"], "signal": "seen"}
                )
            except ToolError as exc:
                log.info("%s did not acknowledge %s: %s", self.agent, event["eventId"], exc)

    def _lines(
        self, turn: Turn, seen: Sequence[EventView], said: Mapping[str, str]
    ) -> tuple[list[str], list[str]]:
        """The recent lines this agent was shown where the turn is, and the turn's own."""
        new = [_event_line(params, said[params["eventId"]]) for params in turn.events]
        return said_lines(seen, turn.events)[-RECENT_LINES:], new


def said_lines(seen: Sequence[EventView], turn: Sequence[Mapping[str, Any]]) -> list[str]:
    """Each message in `seen` once, as it reads now: its newest edit, where it was first said
    (a streamed answer is posted, then edited into its final words: two events, one message).
    Deleted messages are left out, and so is what the `turn` (deliver params) holds: its own
    lines follow as the new ones. So are the host's notices posted as an agent (its harness
    is down, its turn failed) and an agent's answer left unfinished (still being written, or
    cut short: the one a restart asks again for is the very answer this turn writes anew): the
    model did not write them whole, and a small one copies what it sees itself say."""
    ids = {params["eventId"] for params in turn}
    in_turn = {(params.get("source") or {}).get("messageId") for params in turn} - {None}
    newest: dict[str, EventView] = {}  # a later version replaces an earlier in its place
    for event in seen:
        if event.kind in _SAID and event.event_id not in ids and not _hosts(event):
            newest[event.message_id or event.event_id] = event
    return [
        plain_line(_name(event.author), event.text)
        for message, event in newest.items()
        if not event.deleted and message not in in_turn
    ]


def _hosts(event: EventView) -> bool:
    """Whether a line is one of the host's notices, or an unfinished answer, posted as an agent
    (a person typing the same words is still heard)."""
    text = event.text
    return event.author.get("kind") == "agent" and (
        text == TURN_FAILED or is_notice(text) or text.endswith(_UNFINISHED)
    )


def _policy(params: Mapping[str, Any]) -> Policy:
    return Policy(params["attention"]["policy"])


def _name(author: Any) -> str:
    if not isinstance(author, Mapping):
        return "someone"
    return str(author.get("display_name") or author.get("id") or "someone")


def _event_line(params: dict[str, Any], text: str) -> str:
    parsed = parse_deliver(params)
    author = parsed.author.display_name or parsed.author.id
    return plain_line(author, text)


def _said(params: Mapping[str, Any], seen: Sequence[EventView]) -> str:
    """What an event of the turn says: its content, or, where the host withheld it (`notify`:
    a knock on a line in a thread the agent follows, which a tool-using model reads if it
    wants), its text as the ledger gives it to this agent. Without it a small model was shown
    "[no text]" and answered that ("I'm sorry for your loss")."""
    if "knock" not in params:
        return _text(params)
    event_id = params["eventId"]
    return next((event.text for event in seen if event.event_id == event_id), "")


def _named(params: Mapping[str, Any], agent: str) -> bool:
    """Whether the event names `agent` or its role (not a line the room, a conversation or a
    thread it is in gave it, nor a reaction to its message). An edit's reason says only that it
    is an edit: one names the agent when it is in a DM, or mentions the agent or a role."""
    target = params["target"]
    if target["directedness"] not in _NAMED:
        return False
    reason = params["attention"]["reason"]
    if reason in _EDITED:
        mentions = target["mentions"]
        named = f"agent:{agent}" in mentions or any(m.startswith("role:") for m in mentions)
        return named or params["conversation"]["kind"] == "dm"
    return reason not in _NOT_NAMING


def _text(params: Mapping[str, Any]) -> str:
    content = params.get("content")
    parts = content if isinstance(content, list) else [{"type": "text", "text": content or ""}]
    return " ".join(str(p.get("text", "")) for p in parts if isinstance(p, dict))


def asks(text: str, platform: str) -> bool:
    """Whether a message asks something: a question (`?`, an opener such as "how do I", a
    phrase such as "any idea"), or a line to the room ("anyone know ...")."""
    return asks_the_room(text) or DEFAULT_RULES.has(text, Intent.QUESTION, platform)
