"""The text reply path on the tool tests' world: the host's policy decides what each turn owes,
a constrained yes or no decides an open `may_respond`, the answer goes out through the guarded
send path, and a reply being streamed never posts twice."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import timedelta
from functools import partial
from typing import Any

import pytest
from builders import HUMAN, HUMAN2, slack_body, slack_edit, slack_message, slack_reaction
from builders import LEAD as LEAD_USER
from fakes.openai_server import FakeOpenAI, Reply, completion, hang, streamed, text_chunk
from outbox_pump import pumped
from world import BASE, DM, ROLE, THANKS, harness_context, scenario

from adapters.slack import normalise
from core import notices
from core.actions import Action
from core.agent_port import EventView
from core.clock import SystemClock, VirtualClock
from core.decision import Directedness, Disposition, Policy
from core.drafts import CUT_SHORT, MODEL_FAILED, STOPPED, TURN_FAILED
from core.engine import Engine
from core.errors import ModelError, ModelRefusedTurn
from core.outbox import Outbox
from core.sqlite_store import SQLiteStore
from harness_bridge.backends.builtin import BuiltinHarness, loop_harness
from harness_bridge.backends.chat_client import MAX_ANSWER_BYTES, ChatClient
from harness_bridge.backends.local import LocalSettings
from harness_bridge.backends.registry import validate
from harness_bridge.backends.text_reply import FALLBACK, TextReplyLoop, Volunteers, said_lines
from harness_bridge.runtime import InProcessHarness
from harness_bridge.streamed_reply import WRITING, StreamedReply
from harness_bridge.tools import MAX_MESSAGE_CHARS, ChatTools
from harness_bridge.working import working


class Scripted:
    """A `TextModel` that answers from a script and records what it was asked; `written`, if
    set, runs once the whole answer is written, before the model returns it."""

    def __init__(self, answer: str = "It is green.", choice: str = "no") -> None:
        self.answer = answer
        self.choice = choice
        self.asked: list[Sequence[Mapping[str, Any]]] = []
        self.choices: list[Sequence[Mapping[str, Any]]] = []
        self.written: Callable[[], None] | None = None

    async def stream_text(
        self,
        messages: Sequence[Mapping[str, Any]],
        on_text: Callable[[str], Awaitable[None]],
        *,
        max_tokens: int,
    ) -> str:
        self.asked.append(messages)
        for word in self.answer.split(" "):
            await on_text(word + " ")
        if self.written is not None:
            self.written()
        return self.answer

    async def choose(self, messages: Sequence[Mapping[str, Any]], options: Sequence[str]) -> str:
        self.choices.append(messages)
        return self.choice

    async def aclose(self) -> None:
        return None


class Landing:
    """A sender that takes every action at once."""

    async def send(self, action: Action) -> dict[str, Any]:
        return {"messageId": "1767225700.000100"}

    async def find(self, action: Action) -> dict[str, Any] | None:
        return None


async def run_agent(
    engine: Engine,
    tools: ChatTools,
    model: Scripted,
    streaming: frozenset[str] = frozenset(),
    retry_after: float = 5.0,
    volunteers: Volunteers = "ask",
) -> None:
    cleared = partial(working, tools.port, on=False)
    loop = TextReplyLoop(tools, model, cleared, streaming=streaming, volunteers=volunteers)
    harness = InProcessHarness(
        tools.port, engine.deliveries, loop, SystemClock(), quiet_ms=50, retry_after=retry_after
    )
    deliverer = await harness.start()
    try:
        await deliverer.resume()
        async with asyncio.timeout(10):
            await harness.idle()
    finally:
        await harness.stop()


def outbox(store: SQLiteStore, agent: str) -> list[tuple[str, str | None, str | None]]:
    """Each of the agent's queued actions: kind, event answered, text or signal."""
    rows = store.db.execute(
        "SELECT json_extract(action, '$.action'), json_extract(action, '$.inReplyTo'), "
        "json_extract(action, '$.eventId'), json_extract(action, '$.text'), "
        "json_extract(action, '$.signal') FROM outbox WHERE agent = ? ORDER BY rowid",
        (agent,),
    ).fetchall()
    return [(kind, reply or event, text or signal) for kind, reply, event, text, signal in rows]


def answers(store: SQLiteStore, agent: str) -> list[tuple[str, str | None, str | None]]:
    return [row for row in outbox(store, agent) if row[0] in ("send", "react")]


def test_the_dm_is_answered_in_plain_words_and_the_thanks_only_acknowledged() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        model = Scripted("It is green.")
        await run_agent(engine, tools["lead"], model)
        # The host's own fast `seen` on the DM, the reply, and the thanks acknowledged.
        assert sorted(answers(store, "lead")) == [
            ("react", DM, "seen"),
            ("react", THANKS, "seen"),
            ("send", DM, "It is green."),
        ]
        assert model.choices == []  # the policy decided both: the model chose nothing
        [asked] = model.asked
        prompt = "\n".join(str(m["content"]) for m in asked)
        assert "can you check the deploy?" in prompt
        assert "C2A EVENT" not in prompt and "RESPONSE RULES" not in prompt
        assert asked[0]["role"] == "system" and len(asked[0]["content"].splitlines()) == 3

    scenario(test)


@pytest.mark.parametrize("streaming", [frozenset(), frozenset({"slack"})])
def test_a_model_caught_in_a_loop_is_cut_where_the_loop_begins(streaming: frozenset[str]) -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        looping = Scripted("It is green. The deploy is done. " * 12)
        async with pumped(Outbox(store, engine.clock, {"slack": Landing()})):
            await run_agent(engine, tools["lead"], looping, streaming)
        assert replies(store)[-1] == "It is green. The deploy is done."

    scenario(test)


@pytest.mark.parametrize("streaming", [frozenset(), frozenset({"slack"})])
@pytest.mark.parametrize("answer", ["The answer to your question is: " * 12, "Run this:"])
def test_an_answer_that_only_leads_in_to_more_is_no_answer(
    streaming: frozenset[str], answer: str
) -> None:
    """What a loop cut leaves of "The answer to your question is: " written over and over (the
    bundled model did), or a model stopping after its lead-in: the person is told the agent has
    no answer, not shown a colon with nothing after it."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        async with pumped(Outbox(store, engine.clock, {"slack": Landing()})):
            await run_agent(engine, tools["lead"], Scripted(answer), streaming)
        assert finished(store) == [FALLBACK]

    scenario(test)


def test_a_must_respond_event_is_answered_even_when_the_model_writes_nothing() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        await run_agent(engine, tools["lead"], Scripted("  "))
        assert ("send", DM, FALLBACK) in answers(store, "lead")

    scenario(test)


def test_the_claimed_role_mention_is_answered_and_the_others_stay_quiet() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        for agent in ("worker-1", "worker-2"):
            await run_agent(engine, tools[agent], Scripted("On it.", choice="yes"))
        # worker-1 is the responder the host picked: its fast `seen`, then its answer.
        assert answers(store, "worker-1") == [("react", ROLE, "seen"), ("send", ROLE, "On it.")]
        assert answers(store, "worker-2") == []

    scenario(test)


def test_a_may_respond_event_settled_while_the_harness_was_away_is_not_offered() -> None:
    """Handed to worker-2 (or deleted) while worker-1's harness was down, the role question
    still reaches worker-1 when it is back: the model is not asked whether to take it."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        assert isinstance(engine.clock, VirtualClock)
        engine.clock.advance(timedelta(days=1))  # the claim lapsed too: the event is open
        async with store.transaction():
            handed = "handed over to worker-2: worker-1 is down"
            await engine.dispose("worker-1", ROLE, Disposition.SUPERSEDED, handed)
        model = Scripted("On it.", choice="yes")
        await run_agent(engine, tools["worker-1"], model)
        assert model.choices == []
        assert answers(store, "worker-1") == [("react", ROLE, "seen")]

    scenario(test)


@pytest.mark.parametrize(("choice", "answered"), [("no", False), ("yes", True)])
def test_an_open_may_respond_event_is_answered_only_on_the_models_yes(
    choice: str, answered: bool
) -> None:
    """Once worker-1's claim on the role mention has expired, the event is open: the model's
    constrained choice decides, and a yes claims it before answering."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        assert isinstance(engine.clock, VirtualClock)
        engine.clock.advance(timedelta(days=1))
        assert engine.state.claim_holder(ROLE, engine.clock.now()) is None
        model = Scripted("On it.", choice=choice)
        await run_agent(engine, tools["worker-1"], model)
        assert len(model.choices) == 1
        assert model.choices[0][-1]["content"].endswith("build is red")
        # The `seen` is the host's, from when it picked worker-1: only a yes answers.
        expected = [("send", ROLE, "On it.")] if answered else []
        assert answers(store, "worker-1") == [("react", ROLE, "seen"), *expected]
        holder = engine.state.claim_holder(ROLE, engine.clock.now())
        assert holder == ("worker-1" if answered else None)

    scenario(test)


def test_an_agent_that_always_volunteers_claims_and_answers_without_asking_the_model() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        assert isinstance(engine.clock, VirtualClock)
        engine.clock.advance(timedelta(days=1))
        model = Scripted("On it.", choice="no")
        await run_agent(engine, tools["worker-1"], model, volunteers="always")
        assert model.choices == []
        assert answers(store, "worker-1") == [("react", ROLE, "seen"), ("send", ROLE, "On it.")]
        assert engine.state.claim_holder(ROLE, engine.clock.now()) == "worker-1"

    scenario(test)


@pytest.mark.parametrize(
    ("in_thread", "who", "directedness"),
    [(False, HUMAN, Directedness.TO_ME_LIKELY), (True, HUMAN2, Directedness.TO_MY_ROLE)],
)
def test_an_agent_that_always_volunteers_leaves_an_unnamed_line_that_asks_nothing(
    in_thread: bool, who: str, directedness: Directedness
) -> None:
    """After the lead answered alice, in the channel or in a thread under her question, her
    next lines in the channel (her partner's) or anyone's in the thread (`may_respond`, nobody
    named): the one that asks is taken, the one that only says something is not (the bundled
    model would say it again, or answer "I think it is Lisbon" with "I'm sorry for your
    loss")."""

    thread = f"{BASE + 100}.000100" if in_thread else None

    async def said(engine: Engine, second: int, text: str, user: str = HUMAN) -> str:
        message = slack_message(f"{BASE + second}.000100", text, user=user, thread_ts=thread)
        event = normalise(slack_body(message))
        assert event is not None
        async with engine.store.transaction():
            await engine.ingest(event)
        return event.event_id

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        model = Scripted("Prod is up too.", choice="no")
        await said(engine, 100, "<@U0LEAD> is staging up?")
        await said(engine, 101, "yes, since nine", user=LEAD_USER)
        await run_agent(engine, tools["lead"], model, volunteers="always")
        asked = {}
        for second, text in ((140, "the weather is nice today"), (220, "and what about prod?")):
            asked[text] = event_id = await said(engine, second, text, user=who)
            [delivery] = [d for d in await store.deliveries(event_id) if d.decision.agent == "lead"]
            assert delivery.decision.policy is Policy.MAY_RESPOND
            assert delivery.decision.directedness is directedness
            await run_agent(engine, tools["lead"], model, volunteers="always")
        # Edited, it is still a line that names nobody and asks nothing.
        weather = slack_edit(
            f"{BASE + 140}.000100", f"{BASE + 260}.000100", "x", "the weather is fine", user=who
        )
        if thread is not None:
            weather["message"]["thread_ts"] = thread
        async with engine.store.transaction():
            edit = normalise(slack_body(weather))
            assert edit is not None
            await engine.ingest(edit)
        await run_agent(engine, tools["lead"], model, volunteers="always")
        assert model.choices == []
        sent = {to for kind, to, _ in answers(store, "lead") if kind == "send"}
        assert asked["and what about prod?"] in sent
        assert not any(to.startswith(asked["the weather is nice today"]) for to in sent)
        # A thread's line comes as a knock, its words withheld: the model reads them all the same.
        assert f"{who}: and what about prod?" in model.asked[-1][-1]["content"]

    scenario(test)


@pytest.mark.parametrize(
    ("emoji", "reason"), [("+1", "signal_agree"), ("no_good", "signal_declined")]
)
def test_an_agent_that_always_volunteers_leaves_a_reaction_to_its_answer(
    emoji: str, reason: str
) -> None:
    """A 👍 or 🙅 on the lead's answer is a signal to it (`may_respond`): a model with tools may
    proceed or revise, but one that can only write has nothing to add (the bundled model said
    "I'm sorry for any confusion." to a 👍)."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        model = Scripted("I'm sorry for any confusion.", choice="no")
        for payload in (
            slack_message(f"{BASE + 100}.000100", "<@U0LEAD> is staging up?"),
            slack_message(f"{BASE + 101}.000100", "yes, since nine", user=LEAD_USER),
            slack_reaction(f"{BASE + 101}.000100", emoji, event_ts=f"{BASE + 130}.000100"),
        ):
            event = normalise(slack_body(payload))
            assert event is not None
            async with engine.store.transaction():
                await engine.ingest(event)
        [delivery] = [
            d for d in await store.deliveries(event.event_id) if d.decision.agent == "lead"
        ]
        assert (delivery.decision.policy, delivery.decision.reason) == (Policy.MAY_RESPOND, reason)
        await run_agent(engine, tools["lead"], model, volunteers="always")
        assert event.event_id not in {
            to for kind, to, _ in answers(store, "lead") if kind == "send"
        }
        assert model.choices == []

    scenario(test)


def test_a_streamed_reply_whose_edits_fail_still_posts_exactly_one_message(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Streaming forced on: the first words are posted once; drafts wait for the post to land;
    when the post never lands, the final edit is given up (logged) and nothing else is sent."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        ticks = iter(range(0, 10_000, 5))
        reply = StreamedReply(tools["lead"], [DM], live=True, now=lambda: float(next(ticks)))
        for piece in ("The ", "deploy ", "is ", "green."):
            await reply.add(piece)
        key = await reply.finish(FALLBACK)
        assert key is not None and reply.drafts == 0  # the post never landed: no draft
        sends = [row for row in outbox(store, "lead") if row[0] in ("send", "edit")]
        assert sends == [("send", DM, "The" + WRITING)]  # marked unfinished, and left so
        assert "left unfinished" in caplog.text

    with caplog.at_level(logging.WARNING, logger="harness_bridge.streamed_reply"):
        scenario(test)


@pytest.mark.parametrize("streaming", [frozenset(), frozenset({"slack"})])
@pytest.mark.parametrize("words", [12_000, 20_000])
def test_an_answer_longer_than_a_message_may_be_is_split_or_sent_as_a_file(
    streaming: frozenset[str], words: int
) -> None:
    """A model server that writes on past the tokens asked, on a platform with no message
    limit of its own: no message is drawn past what the tools take (it was refused, and the
    answer left unfinished or never posted); 12,000 words take two messages, 20,000 (more
    than the workspace's three) go as a file."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        model = Scripted(" ".join(f"w{i}" for i in range(words)))
        async with pumped(Outbox(store, engine.clock, {"slack": Landing()})):
            await run_agent(engine, tools["lead"], model, streaming)
        texts = [text for text in replies(store) if text is not None]
        assert texts and max(map(len, texts)) <= MAX_MESSAGE_CHARS
        finals = finished(store)
        file = store.db.execute(
            "SELECT json_extract(action, '$.files[0].content') FROM outbox "
            "WHERE agent = 'lead' AND json_extract(action, '$.files') IS NOT NULL"
        ).fetchall()
        if words == 12_000:
            assert len(finals) == 2 and not file  # 77,000 characters
            assert " ".join(finals).split() == model.answer.split()
        else:
            assert [row[0].split() for row in file] == [model.answer.split()]

    scenario(test)


def fence_lines(text: str) -> int:
    return sum(line.strip().startswith("```") for line in text.splitlines())


@pytest.mark.parametrize("streaming", [frozenset(), frozenset({"slack"})])
def test_a_code_block_cut_between_two_messages_is_closed_in_one_and_reopened_in_the_next(
    streaming: frozenset[str],
) -> None:
    """An answer that is mostly one code block, longer than a message may be: the first
    message closes the block where it is cut, the second reopens it with its language, and
    the two hold every line of the answer once."""
    code = "\n".join(f"print('line {i}')" for i in range(3_000))
    answer = f"Here is the script:\n```python\n{code}\n```\nRun it with python."

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        async with pumped(Outbox(store, engine.clock, {"slack": Landing()})):
            await run_agent(engine, tools["lead"], Scripted(answer), streaming)
        finals = finished(store)
        assert len(finals) == 2 and max(map(len, finals)) <= MAX_MESSAGE_CHARS
        assert [fence_lines(text) % 2 for text in finals] == [0, 0]
        assert finals[0].endswith("\n```") and finals[1].startswith("```python\n")
        lines = [line.strip() for text in finals for line in text.splitlines()]
        assert [line for line in lines if not line.startswith("```")] == [
            line.strip() for line in answer.splitlines() if not line.startswith("```")
        ]

    scenario(test)


def test_a_message_is_never_cut_right_after_the_line_that_opens_a_code_block() -> None:
    """Where the last line that fits opens a code block, that line goes on to the next
    message with its block: the first would otherwise end with an empty block."""
    prose = " ".join(["word"] * 40)
    code = f"```bash\n{'x' * 100}\n```"

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        reply = StreamedReply(tools["lead"], [DM], live=False, limit=len(prose) + 20)
        await reply.add(f"{prose}\n{code}")
        async with pumped(Outbox(store, engine.clock, {"slack": Landing()})):
            await reply.finish(FALLBACK)
        assert replies(store) == [prose, code]

    scenario(test)


def test_an_answer_the_model_leaves_inside_a_code_block_is_posted_with_it_closed() -> None:
    """A model that stops inside a code block (at its token bound): the fence would show as
    text, or the rest of the page would become code, were the block not closed."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        await run_agent(engine, tools["lead"], Scripted("Like this:\n```python\nprint(s[::-1])"))
        sent = [text for kind, _, text in answers(store, "lead") if kind == "send"]
        assert sent == ["Like this:\n```python\nprint(s[::-1])\n```"]

    scenario(test)


ANA = {"id": "ana", "kind": "human", "display_name": "ana"}
LEAD = {"id": "lead", "kind": "agent", "display_name": "lead"}


def said(
    event_id: str,
    kind: str,
    message: str,
    text: str,
    deleted: bool = False,
    author: dict[str, str] = ANA,
) -> EventView:
    """A line of the conversation as the agent was shown it."""
    return EventView(
        event_id=event_id,
        sequence=0,
        kind=kind,
        conversation={"id": "general"},
        author=author,
        created_at="2026-01-01T00:00:00Z",
        text=text,
        deleted=deleted,
        directedness=Directedness.AMBIENT,
        policy=Policy.MAY_RESPOND,
        reason="ambient",
        disposition=None,
        message_id=message,
    )


def test_the_recent_lines_hold_each_message_once_as_it_reads_now() -> None:
    """A streamed answer is a post and its final edit: the prompt shows its final words once,
    where it was said; a deleted message is gone, the message the turn holds an edit of is
    left to the turn's own lines, and a notice the host posted as the agent is no line of its
    own."""
    seen = [
        said("e1", "message", "m1", "The deploy is …"),
        said("e2", "message", "m2", "lunch?"),
        said("e3", "edit", "m1", "The deploy is green."),
        said("e4", "message", "m3", "", deleted=True),
        said("e5", "message", "m4", "what about the tests?"),
        said("e6", "edit", "m4", "what about the tests, lead?"),
        said("e7", "message", "m5", TURN_FAILED, author=LEAD),  # the host's, not the model's
        said("e8", "message", "m6", TURN_FAILED),  # a person's, whatever the words
        said("e9", "message", "m7", notices.UNANSWERED, author=LEAD),
        said("e10", "message", "m8", notices.loop_stopped(4), author=LEAD),
    ]
    turn = [{"eventId": "e6", "source": {"messageId": "m4"}}]
    lines = said_lines(seen, turn)
    assert lines == ["ana: The deploy is green.", "ana: lunch?", f"ana: {TURN_FAILED}"]


def test_an_unfinished_answer_is_no_line_the_model_sees() -> None:
    """The draft a restart finished as cut short, and asks again for, is what this turn writes
    anew, not history: a small model copies what it sees itself say. A draft still being
    written or stopped is no whole answer either; a person's words ending the same way are."""
    seen = [
        said("e1", "message", "m1", "@lead explain tcp"),
        said("e2", "message", "m2", f"A{CUT_SHORT}", author=LEAD),
        said("e3", "message", "m3", f"It is{MODEL_FAILED}", author=LEAD),
        said("e4", "message", "m4", f"Deploy{STOPPED}", author=LEAD),
        said("e5", "message", "m5", f"The build{WRITING}", author=LEAD),
        said("e6", "message", "m6", f"wait{WRITING}"),
        said("e7", "message", "m7", "The build is green.", author=LEAD),
    ]
    lines = said_lines(seen, [{"eventId": "e1", "source": {"messageId": "m1"}}])
    assert lines == [f"ana: wait{WRITING}", "lead: The build is green."]


class Halting(Scripted):
    """Writes its first words, then fails (`fails`) or waits until its turn is cancelled;
    `started` is set once the words are written."""

    def __init__(self, fails: bool) -> None:
        super().__init__("It is")
        self.fails = fails
        self.started = asyncio.Event()

    async def stream_text(
        self,
        messages: Sequence[Mapping[str, Any]],
        on_text: Callable[[str], Awaitable[None]],
        *,
        max_tokens: int,
    ) -> str:
        for word in ("It ", "is "):
            await on_text(word)
        self.started.set()
        if self.fails:
            raise ModelError("the model server reported an error mid-stream")
        await asyncio.Event().wait()
        raise AssertionError("never")


def replies(store: SQLiteStore) -> list[str]:
    return [str(text) for kind, _, text in outbox(store, "lead") if kind in ("send", "edit")]


def finished(store: SQLiteStore) -> list[str]:
    """The lead's messages as each ended: its post, or the last (not draft) edit finishing it."""
    return [
        text
        for text, draft in store.db.execute(
            "SELECT json_extract(action, '$.text'), json_extract(action, '$.draft') "
            "FROM outbox WHERE agent = 'lead' AND json_extract(action, '$.action') "
            "IN ('send', 'edit') ORDER BY rowid"
        )
        if not draft and not text.endswith(WRITING)
    ]


class Unreachable(Scripted):
    """Fails its first `failures` answers before writing a word, as a model server that is
    down does; notes for each call whether the engine held the lead as unavailable."""

    error: type[ModelError] = ModelError

    def __init__(self, engine: Engine, failures: int) -> None:
        super().__init__("It is green.")
        self.engine, self.failures = engine, failures
        self.down: list[bool] = []

    async def before_try(self) -> None:
        """What happens elsewhere before each try (nothing here)."""

    async def stream_text(
        self,
        messages: Sequence[Mapping[str, Any]],
        on_text: Callable[[str], Awaitable[None]],
        *,
        max_tokens: int,
    ) -> str:
        await self.before_try()
        self.down.append("lead" in self.engine.unavailable)
        if len(self.down) <= self.failures:
            raise self.error("the model server at http://127.0.0.1:9 failed: connect refused")
        return await super().stream_text(messages, on_text, max_tokens=max_tokens)


def test_a_turn_whose_model_is_unreachable_is_tried_again_until_it_answers() -> None:
    """The model server is down for the first two tries: the lead is marked unavailable (its
    new questions get `blocked`, its people a notice) and the turn is tried again; the third
    answers, once, and the lead is available again."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        model = Unreachable(engine, failures=2)
        await run_agent(engine, tools["lead"], model, retry_after=0.01)
        assert model.down == [False, True, True]
        assert "lead" not in engine.unavailable
        assert [row for row in answers(store, "lead") if row[0] == "send"] == [
            ("send", DM, "It is green.")
        ]

    scenario(test)


class Refusing(Unreachable):
    """Up, but fails the lead's question the same way each time, as a server answering HTTP
    400 (too long for its context) does."""

    error = ModelRefusedTurn


@pytest.mark.parametrize("failures", [2, 99])
def test_a_turn_the_model_refuses_three_times_fails_and_its_agent_goes_on(failures: int) -> None:
    """Refused twice, the third try answers; refused for good, the third refusal ends the
    turn: the lead says so where it was asked (a post answering nothing), the question is
    recorded `failed`, and the lead is available for the next one (it was held down for good,
    every later question `blocked`)."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        model = Refusing(engine, failures=failures)
        await run_agent(engine, tools["lead"], model, retry_after=0.01)
        assert model.down == [False, True, True]
        assert "lead" not in engine.unavailable
        sent = [row for row in outbox(store, "lead") if row[0] == "send"]
        [delivery] = [d for d in await store.deliveries(DM) if d.decision.agent == "lead"]
        if failures == 2:
            assert sent == [("send", DM, "It is green.")]
            assert delivery.disposition is Disposition.RESPONDED
        else:
            assert sent == [("send", None, TURN_FAILED)]
            assert delivery.disposition is Disposition.FAILED

    scenario(test)


class GivenUp(Unreachable):
    """Down for good; after the second try the lead's question is ended elsewhere (handed
    over to another agent, deleted or stopped)."""

    async def before_try(self) -> None:
        if len(self.down) == 1:
            await self.engine.dispose("lead", DM, Disposition.SUPERSEDED, "handed over")


def test_a_turn_that_marked_its_agent_down_and_ends_owing_nothing_marks_it_up() -> None:
    """Nothing else would find the model up again: a role question is handed to an agent that
    is up, so one held down with no turn would get none until someone named it."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        model = GivenUp(engine, failures=99)
        await run_agent(engine, tools["lead"], model, retry_after=0.01)
        assert model.down == [False, True]  # marked down by the first failure
        assert "lead" not in engine.unavailable
        assert [row for row in answers(store, "lead") if row[0] == "send"] == []

    scenario(test)


def test_an_answer_the_model_fails_halfway_through_is_finished_as_cut_short() -> None:
    """The model fails after its first words: the message does not stay marked as being
    written; it shows what was written and that the model failed. The answer is given, so
    the lead is not left marked unavailable with no turn to find its model up again."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        async with pumped(Outbox(store, engine.clock, {"slack": Landing()})):
            await run_agent(engine, tools["lead"], Halting(fails=True), frozenset({"slack"}))
        assert replies(store) == ["It" + WRITING, "It is" + MODEL_FAILED]
        assert "lead" not in engine.unavailable

    scenario(test)


@pytest.mark.parametrize("how", ["told to stop", "host shuts down"])
def test_an_answer_stopped_halfway_ends_as_stopped_but_one_cut_by_a_shutdown_waits(
    how: str,
) -> None:
    """ "stop" while the lead writes: the message is finished with what was written and
    `[stopped]`. A shutdown leaves it marked, for the next start to finish and ask again."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        model = Halting(fails=False)
        loop = TextReplyLoop(tools["lead"], model, streaming=frozenset({"slack"}))
        harness = InProcessHarness(
            tools["lead"].port, engine.deliveries, loop, SystemClock(), quiet_ms=50
        )
        async with pumped(Outbox(store, engine.clock, {"slack": Landing()})):
            serving = asyncio.create_task(harness.run())
            await model.started.wait()
            if how == "told to stop":
                stop = slack_message(
                    f"{BASE + 9}.000100", "stop", channel="D0LEAD", channel_type="im"
                )
                async with store.transaction():
                    event = normalise(slack_body(stop, via="lead"))
                    assert event is not None
                    await engine.ingest(event)
                harness.wake()
                async with asyncio.timeout(10):
                    while len(replies(store)) < 2:
                        await asyncio.sleep(0.02)
            serving.cancel()
            await asyncio.gather(serving, return_exceptions=True)
        stopped = ["It is" + STOPPED] if how == "told to stop" else []
        assert replies(store) == ["It" + WRITING, *stopped]

    scenario(test)


@pytest.mark.parametrize("streaming", [frozenset({"slack"}), frozenset({"webchat"})])
def test_only_a_platform_that_takes_drafts_sees_the_answer_while_it_is_written(
    streaming: frozenset[str],
) -> None:
    """The world is on Slack: declared as taking drafts, the first words are posted as they
    come, marked as still being written, and the final edit takes the mark away; otherwise the
    answer is posted whole once written. Either way it is posted once."""

    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        def sent() -> list[tuple[str, str | None, str | None]]:
            return [row for row in outbox(store, "lead") if row[0] == "send"]

        model = Scripted("Green.")
        sent_while_writing: list[tuple[str, str | None, str | None]] = []
        model.written = lambda: sent_while_writing.extend(sent())
        async with pumped(Outbox(store, engine.clock, {"slack": Landing()})):
            await run_agent(engine, tools["lead"], model, streaming)
        live = "slack" in streaming
        assert sent_while_writing == ([("send", DM, "Green." + WRITING)] if live else [])
        assert sent() == [("send", DM, "Green." + WRITING if live else "Green.")]
        texts = [text for kind, _, text in outbox(store, "lead") if kind in ("send", "edit")]
        assert texts[-1] == "Green."

    scenario(test)


def test_the_reply_setting_picks_the_path_with_a_default_per_backend() -> None:
    async def test(engine: Engine, tools: dict[str, ChatTools], store: SQLiteStore) -> None:
        model: Any = Scripted()
        local = validate(LocalSettings, "lead", {"backend": "local"})
        text = loop_harness(harness_context(engine, "lead"), local, model, reply="text")
        told = validate(LocalSettings, "lead", {"backend": "local", "reply": "tools"})
        tools_path = loop_harness(harness_context(engine, "lead"), told, model, reply="text")
        openai_default = loop_harness(harness_context(engine, "lead"), local, model)
        assert isinstance(text, BuiltinHarness) and isinstance(text.loop, TextReplyLoop)
        assert not isinstance(tools_path.loop, TextReplyLoop)
        assert not isinstance(openai_default.loop, TextReplyLoop)
        drafting = harness_context(engine, "lead", frozenset({"toy"}))
        streamed = loop_harness(drafting, local, model, reply="text").loop
        assert isinstance(streamed, TextReplyLoop) and streamed.streaming == {"toy"}
        assert isinstance(text.loop, TextReplyLoop) and text.loop.streaming == frozenset()

    scenario(test)


def test_a_model_server_chooses_under_a_schema_and_anything_else_counts_as_the_last_option() -> (
    None
):
    async def test() -> None:
        script = [completion('{"answer": "yes"}'), completion("Sure, happy to help!")]
        async with FakeOpenAI(script) as server:
            client = ChatClient(server.base_url, "m")
            ask = [{"role": "user", "content": "should you answer?"}]
            assert await client.choose(ask, ("yes", "no")) == "yes"
            assert await client.choose(ask, ("yes", "no")) == "no"  # free text is never read
            await client.aclose()
        schema = server.requests[0]["response_format"]["json_schema"]["schema"]
        assert schema["properties"]["answer"]["enum"] == ["yes", "no"]
        assert "tools" not in server.requests[0]

    asyncio.run(test())


def test_a_model_server_that_stops_writing_is_given_up_on_with_a_reason_that_says_so() -> None:
    """A stream that starts and then hangs ends at the client's timeout, as a plain
    `ModelError` (the server may be overloaded: tried again) whose text says what happened
    (a timeout's own text is empty)."""

    async def test() -> None:
        async with FakeOpenAI([hang()]) as server:
            client = ChatClient(server.base_url, "m", timeout=0.2)
            with pytest.raises(ModelError, match=r"no answer within 0\.2 s") as raised:
                await client.choose([{"role": "user", "content": "well?"}], ("yes", "no"))
            await client.aclose()
        assert not isinstance(raised.value, ModelRefusedTurn)

    asyncio.run(test())


@pytest.mark.parametrize("how", ["whole", "streamed", "error"])
def test_a_model_server_that_writes_on_and_on_is_cut_off_not_read_into_memory(how: str) -> None:
    """A server that ignores the tokens asked and sends more than a model ever answers (over
    `MAX_ANSWER_BYTES`): the answer is refused at the cap (the host read 7 GB in 20 s of one
    such answer before); an error's body is read only as far as the log line shows it."""
    piece = "x" * (1 << 16)
    pieces = MAX_ANSWER_BYTES // len(piece) + 2
    reply = {
        "whole": completion(piece * pieces),
        "streamed": streamed(*(text_chunk(piece) for _ in range(pieces))),
        "error": Reply(body={"error": piece * pieces}, status=500),
    }[how]

    async def test() -> None:
        async with FakeOpenAI([reply]) as server:
            client = ChatClient(server.base_url, "m")
            ask = [{"role": "user", "content": "well?"}]
            if how == "whole":
                asked = client.choose(ask, ("yes", "no"))
            else:
                asked = client.stream_text(ask, _ignore, max_tokens=10)
            with pytest.raises(ModelError) as raised:
                await asked
            await client.aclose()
        if how == "error":
            assert "HTTP 500" in str(raised.value) and len(str(raised.value)) < 1_000
        else:
            assert isinstance(raised.value, ModelRefusedTurn)
            assert f"over {MAX_ANSWER_BYTES:,} bytes" in str(raised.value)

    asyncio.run(test())


async def _ignore(text: str) -> None:
    return None
