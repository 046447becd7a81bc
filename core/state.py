"""What the engine remembers between events, folded from the ledger so a restart rebuilds it.

The state changes only through `State.note_vias` (the agents whose connections received an
event), `State.apply` (an event and the decisions made for it), `State.note_claim`,
`State.note_disposition` and `State.note_turn`. Replaying the ledger through those methods
yields the same state, so nothing here needs its own table. The records it keeps are in
`core.state_records`, the reactions on messages in `core.reactions`.

What the state keeps per conversation is bounded (`core.state_recent`): the newest messages
(`core.state_messages`), the channels continuity remembers (`core.continuity`), the
`THREADS_HELD` threads posted in most recently and the `CHAINS_HELD` runs of fragments started
most recently. An evicted thread or run of fragments is one the host never saw: a reply in the
thread is decided as in a thread nobody has posted in yet (no participants, no agents following
it), a fragment as a person's first line. A thread an agent owns outlives that bound (the agent
owes its starter the thread) but has its own, `OWNED_THREADS_HELD`: past it, the owned thread
whose last post is oldest is forgotten, and a reply there months later is decided as in a
thread the agent does not own (nobody has posted in it yet, its root long gone).

It is over 400 lines: every change to the memory is folded here, in one place, so that a
live event and a replayed one can never be folded two ways; what each record is and how it is
bounded are the modules named above.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Final

from core.continuity import Continuity
from core.decision import Decision, Directedness, Disposition, InjectionMode, Policy
from core.events import AuthorKind, ChatEvent, Conversation, ConversationKind, EventKind
from core.manifest import Workspace
from core.names import NameMatcher
from core.reactions import ReactionMarks
from core.scorer import Scorer, default_scorer
from core.state_messages import MESSAGES_HELD
from core.state_recent import Recent
from core.state_records import (
    Chain,
    LateQuestion,
    MessageRecord,
    ThreadRecord,
    kept_decision,
    message_key,
    message_of,
    owned,
    root_thread,
)

__all__ = ["CHAINS_HELD", "OWNED_THREADS_HELD", "STREAKS_HELD", "THREADS_HELD", "State"]

THREADS_HELD: Final = 5_000
"""How many threads the state remembers besides those agents own, the most recently posted in:
about 700 bytes each, so some 4 MB; a thread quiet while five thousand others had posts is
over."""
OWNED_THREADS_HELD: Final = 20_000
"""How many threads agents own the state remembers beyond `THREADS_HELD`, those posted in most
recently: one more for each question an agent answered in a thread (about 620 bytes each, so
some 12 MB). A host running for months would otherwise keep every one; an owned thread quiet
while twenty thousand others were owned after it is one nobody comes back to."""
STREAKS_HELD: Final = 10_000
"""How many conversations the state counts a run of agents' lines in (`streaks`, for the loop
limit), those an agent posted in most recently: a conversation where an agent spoke last stays
there until a person speaks, so every thread an agent answered last would stay for good. One
forgotten is counted from nothing again, as after a person's line: a loop quiet while ten
thousand other conversations had agents' lines is over, and its escalation goes with it."""
CHAINS_HELD: Final = 2_000
"""How many runs of fragments the state remembers, the most recently started: one lasts the
merge window (seconds), and two thousand people starting one within it is far beyond any
workspace."""

_ANSWERED = frozenset({Disposition.RESPONDED, Disposition.ACKNOWLEDGED})
# What starts a run of fragments: a directed decision the agent may answer with a model turn.
_DIRECTED = frozenset({Directedness.TO_ME, Directedness.TO_MY_ROLE})
_MAY_ANSWER = frozenset({Policy.MUST_RESPOND, Policy.MAY_RESPOND})
_NO_FRAGMENTS = frozenset({InjectionMode.NOTIFY, InjectionMode.TOOL_MAILBOX})
_TURNS = frozenset({InjectionMode.BUFFERED, InjectionMode.IMMEDIATE})
_TEXTS = frozenset({EventKind.MESSAGE, EventKind.EDIT})
_REACTIONS = (EventKind.REACTION_ADDED, EventKind.REACTION_REMOVED)
# Reading an enum member off its class costs a lookup on every use; the hot paths read these.
_MESSAGE = EventKind.MESSAGE
_EDIT = EventKind.EDIT
_DELETE = EventKind.DELETE
_THREAD = ConversationKind.THREAD
_CHANNEL = ConversationKind.CHANNEL
_HUMAN = AuthorKind.HUMAN
_AGENT = AuthorKind.AGENT
_TO_ME = Directedness.TO_ME


def _shipped_scorer() -> Scorer | None:
    return default_scorer()  # the package's, looked up at each call so a test can replace it


def _threads(limit: int, owned_limit: int) -> Recent[str, ThreadRecord]:
    """The threads the state remembers: `limit` of them, and besides those up to `owned_limit`
    threads an agent owns, each the newest by its last post."""
    return Recent(limit, spare=owned, spared_limit=owned_limit)


@dataclass(slots=True)
class State:
    """The engine's memory of one workspace."""

    workspace: Workspace
    # The newest messages seen, not all of them (`core.state_messages`: what an evicted one means).
    messages: Recent[str, MessageRecord] = field(default_factory=lambda: Recent(MESSAGES_HELD))
    members: dict[str, set[str]] = field(default_factory=dict)
    threads: Recent[str, ThreadRecord] = field(
        default_factory=lambda: _threads(THREADS_HELD, OWNED_THREADS_HELD)
    )
    # Threads that are channels of their own (their creation seen), by the channel's id, the
    # most recently created or posted in; as many as `threads` holds at most, so every thread
    # held keeps its channel. One forgotten is a channel whose creation the host never saw: a
    # post in it is decided as in a channel, as for a thread made before the host was there.
    thread_channels: Recent[str, Conversation] = field(
        default_factory=lambda: Recent(THREADS_HELD + OWNED_THREADS_HELD)
    )
    chains: Recent[tuple[str, str], Chain] = field(default_factory=lambda: Recent(CHAINS_HELD))
    # Agents' lines since a person's, per conversation (`STREAKS_HELD`: what forgetting means).
    streaks: Recent[str, int] = field(default_factory=lambda: Recent(STREAKS_HELD))
    escalated: set[str] = field(default_factory=set)
    left: set[tuple[str, str]] = field(default_factory=set)
    # Agents muted until a time (None: until unmuted), folded from the ledger (`core.mutes`).
    muted: dict[str, datetime | None] = field(default_factory=dict)
    busy: dict[str, int] = field(default_factory=dict)
    turns: dict[tuple[str, str], deque[datetime]] = field(default_factory=dict)
    claims: dict[str, tuple[str, datetime]] = field(default_factory=dict)
    obligations: dict[tuple[str, str], bool] = field(default_factory=dict)
    # Questions received late (by ledger sequence), where they were asked and the agents they
    # were must_respond for: the only deliveries a late reply can answer in the gap
    # (`core.deciding`).
    late_questions: dict[int, LateQuestion] = field(default_factory=dict)
    reactions: ReactionMarks = field(default_factory=ReactionMarks)
    continuity: Continuity = field(default_factory=Continuity)
    # Which questions to the room each agent gets as `to_me_likely`; None: continuity alone.
    scorer: Scorer | None = field(default_factory=_shipped_scorer)
    names: NameMatcher = field(init=False)

    def __post_init__(self) -> None:
        agents = self.workspace.manifest.agents
        self.names = NameMatcher.build({a: tuple(c.names) for a, c in agents.items()})

    # ---- reading -------------------------------------------------------------------------

    def resolve(self, event: ChatEvent) -> ChatEvent:
        """The event with what the host knows filled in: thread conversations, authors of
        edits and deletes, the message an edit's message answers (a platform may send an edit
        without it: the web chat, Slack), the conversation of a reaction's message, and agent
        authors."""
        conversation = self.thread_channels.get(event.conversation.id, event.conversation)
        if conversation.kind is not _THREAD and event.conversation.thread_id:
            conversation = event.conversation
        author, reply_to = event.author, event.reply_to
        # An edit, delete or reaction is about a message the host may have seen.
        target = self.target(event) if event.kind is not _MESSAGE else None
        if target is not None:
            conversation = target.conversation
            if event.kind in (_EDIT, _DELETE) and not author.id:
                author = replace(author, id=target.author_id)
            if event.kind is _EDIT and reply_to is None:
                reply_to = target.reply_to
        agent = self.workspace.agent_for(event.platform, author.id)
        if agent is not None and author.kind is not _AGENT:
            author = replace(author, kind=_AGENT)
        event_id = event.event_id
        if event.kind in _REACTIONS:
            generation = self.reactions.generation(event)
            if generation > 1:
                event_id = f"{event_id}#{generation}"
        if (
            conversation is event.conversation
            and author is event.author
            and event_id is event.event_id
            and reply_to is event.reply_to
        ):
            return event
        return replace(
            event, event_id=event_id, conversation=conversation, author=author, reply_to=reply_to
        )

    def target(self, event: ChatEvent) -> MessageRecord | None:
        """The message an edit, delete or reaction is about (or the message itself)."""
        key = message_of(event)
        return self.messages.get(key) if key is not None else None

    def replied_message(self, event: ChatEvent) -> MessageRecord | None:
        if event.reply_to is None:
            return None
        return self.messages.get(message_key(event.platform, event.conversation.id, event.reply_to))

    def thread(self, event: ChatEvent) -> ThreadRecord | None:
        """The thread `event` is in: as held, or, before anything was posted in it, as its root
        makes it (the first reply to an agent's message is in that agent's thread)."""
        if event.conversation.kind is not _THREAD:
            return None
        return self.threads.held(event.conversation.key) or self._rooted(event)

    def _rooted(self, event: ChatEvent) -> ThreadRecord | None:
        """A new thread's record from the message it hangs off, when that is held: in its
        channel, or in its parent for a thread that is a channel of its own (Discord starts one
        from a message under the message's id). An agent that answered that message is in the
        thread as if it had posted there: a person's follow-up under their question, answered
        beside it, is for the agent that answered. None when the root is not known."""
        conversation, root_id = event.conversation, event.conversation.thread_id or ""
        for channel in filter(None, (conversation.id, conversation.parent_id) if root_id else ()):
            root = self.messages.get(message_key(event.platform, channel, root_id))
            if root is not None:
                thread = root_thread(root)
                for agent in root.answered:
                    thread.agents.add(agent)
                    if (user := self.workspace.user_id(event.platform, agent)) is not None:
                        thread.participants.add(user)
                return thread
        return None

    def claim_holder(self, item: str, now: datetime) -> str | None:
        """Who holds the claim on `item` at `now`, if anyone; an expired claim is let go of."""
        held = self.claims.get(item)
        if held is not None and held[1] <= now:
            del self.claims[item]
            return None
        return None if held is None else held[0]

    def forget_expired_claims(self, now: datetime) -> None:
        """Let go of every claim expired at `now` (`Engine.sweep`): one holds nothing any more,
        and a start reads back only those unexpired, so the memory keeps the claims held now,
        not one for every event ever claimed."""
        for item in [item for item, (_, until) in self.claims.items() if until <= now]:
            del self.claims[item]

    def is_muted(self, agent: str, now: datetime) -> bool:
        """Whether `agent` is muted at `now` (`core.mutes`)."""
        until = self.muted.get(agent, now)
        return until is None or now < until

    def open_turns(self, agent: str, author: str, now: datetime, window: timedelta) -> int:
        """Full turns this person caused this agent within the window ending now; a person
        with none left there is let go of (`turns` keeps only who has turns to count)."""
        stamps = self.turns.get((agent, author))
        if not stamps:
            return 0
        while stamps and stamps[0] <= now - window:
            stamps.popleft()
        if not stamps:
            del self.turns[agent, author]
        return len(stamps)

    # ---- changing ------------------------------------------------------------------------

    def note_turn(self, agent: str, person: str, at: datetime) -> None:
        """A full turn `person` caused `agent` at `at`, counted by their budget (`open_turns`):
        one a decision started, or the one that takes up what they asked over the budget
        (`core.followup`).

        `turns` is ordered by each pair's newest turn, so the pairs at its front whose newest
        turn is two budget windows before `at` (one to spare for a clock behind the events'
        times) are let go of here: their turns count in no window a decision reads any more,
        and a person who never comes back would otherwise stay for good."""
        stamps = self.turns.pop((agent, person), None) or deque()
        stamps.append(at)
        self.turns[agent, person] = stamps
        while self.turns:
            (other, someone), held = next(iter(self.turns.items()))
            if held[-1] > at - 2 * timedelta(seconds=self.workspace.budget(other).window_s):
                break
            del self.turns[other, someone]

    def note_vias(self, event: ChatEvent, agents: Iterable[str]) -> None:
        """The agents whose own connections received the event are members of its channel."""
        received = set(agents)
        if not received:
            return
        scope = event.conversation.scope
        members = self.members.get(scope)
        if members is None:
            self.members[scope] = received
        else:
            members |= received

    def apply(self, event: ChatEvent, decisions: Iterable[Decision], *, first: bool = True) -> None:
        """Fold one resolved event and the decisions made for it into the state. Called once
        per event in ledger order (`first`), and again with only the new decisions when the
        same event arrives through another agent's connection."""
        decided = list(decisions)
        kind = event.kind
        if not first:
            self._note_decisions(event, decided, self.target(event) if kind in _TEXTS else None)
            return
        # The message record a text event's decisions are kept on, looked up once.
        target: MessageRecord | None = None
        if kind is _MESSAGE:
            target = self._apply_message(event, decided)
        elif kind is _EDIT:
            target = self._apply_edit(event, decided)
        elif kind is _DELETE:
            target = self.target(event)
            if target is not None:
                target.deleted = True
                target.text = ""
        elif kind in (EventKind.MEMBER_JOINED, EventKind.MEMBER_LEFT):
            agent = self.workspace.agent_for(event.platform, event.user_id)
            if agent is not None:
                scope = self.members.setdefault(event.conversation.scope, set())
                if kind is EventKind.MEMBER_JOINED:
                    scope.add(agent)
                else:
                    scope.discard(agent)
        elif kind in _REACTIONS:
            self.reactions.note(event)
        elif kind is EventKind.THREAD_CREATED:
            self.thread_channels.hold(event.conversation.id, event.conversation)
            key = event.conversation.key
            record = self.threads.held(key) or self._rooted(event) or ThreadRecord()
            self.threads.hold(key, record)
            # Its starter owns it if an agent, else the agent whose message it hangs off.
            starter = self.workspace.agent_for(event.platform, event.author.id)
            record.owner = starter or record.owner
            record.root_author = record.root_author or event.author.id
        self._note_decisions(event, decided, target)

    def _apply_message(self, event: ChatEvent, decisions: list[Decision]) -> MessageRecord | None:
        """Fold a message in; returns its record (None: no native id, or not held)."""
        conversation = event.conversation
        author_agent = self.workspace.agent_for(event.platform, event.author.id)
        key = message_of(event)
        target = self.messages.get(key) if key is not None else None
        if key is not None and target is None:  # held once, when first seen: the first evicted
            self.messages.hold(
                key,
                MessageRecord(
                    event_id=event.event_id,
                    latest=event.event_id,
                    author_id=event.author.id,
                    author_agent=author_agent,
                    conversation=conversation,
                    text=event.text,
                    reply_to=event.reply_to,
                    versions=[event.event_id],
                ),
            )
            target = self.messages.get(key)  # None only past a limit of nothing
        if conversation.kind is _THREAD:
            self._note_thread_post(event, author_agent)
        if author_agent is not None:
            self.members.setdefault(conversation.scope, set()).add(author_agent)
        self._note_streak(event, author_agent)
        self._note_chain(event, decisions)
        if conversation.kind is _CHANNEL:
            self._note_continuity(event, author_agent, decisions)
        for decision in decisions:
            if decision.reason == "leave_requested":
                self.left.add((decision.agent, conversation.key))
            elif decision.directedness is _TO_ME:
                self.left.discard((decision.agent, conversation.key))
                self.left.discard((decision.agent, conversation.scope))
        return target

    def _note_thread_post(self, event: ChatEvent, author_agent: str | None) -> None:
        conversation = event.conversation
        record = self.thread(event) or ThreadRecord()
        self.threads.hold(conversation.key, record)
        channel = self.thread_channels.get(conversation.id)
        if channel is not None:  # a thread that is a channel: posted in, so kept longer
            self.thread_channels.hold(conversation.id, channel)
        record.participants.add(event.author.id)
        if author_agent is not None:
            record.agents.add(author_agent)

    def _note_streak(self, event: ChatEvent, author_agent: str | None) -> None:
        key = event.conversation.key
        if event.author.kind is _HUMAN and author_agent is None:
            self.streaks.pop(key, None)
            self.escalated.discard(key)
        else:
            streaks = self.streaks
            if key not in streaks and len(streaks) >= streaks.limit:
                self.escalated.discard(next(iter(streaks)))  # the run evicted next: over
            streaks.hold(key, streaks.get(key, 0) + 1)

    def _note_continuity(
        self, event: ChatEvent, author_agent: str | None, decisions: list[Decision]
    ) -> None:
        addressed = event.mentions.users
        if event.reply_to is not None or event.target_author_id is not None:
            replied = self.replied_message(event)
            reply_author = event.target_author_id or (replied.author_id if replied else None)
            if reply_author is not None:
                addressed = (*addressed, reply_author)
        turned: tuple[str, ...] = ()
        to_agents: tuple[str, ...] = ()
        for decision in decisions:  # nearly always neither: one pass, no tuples built
            if decision.mode in _TURNS:
                turned = (*turned, decision.agent)
            if decision.directedness is _TO_ME:
                to_agents = (*to_agents, decision.agent)
        self.continuity.note(event, author_agent, addressed, turned, to_agents)

    def _note_chain(self, event: ChatEvent, decisions: list[Decision]) -> None:
        key = (event.conversation.key, event.author.id)
        directed = {
            d.agent: d
            for d in decisions
            if d.policy in _MAY_ANSWER
            and d.directedness in _DIRECTED
            and d.mode not in _NO_FRAGMENTS
        }
        chain = self.chains.get(key)
        message = message_of(event)
        if directed and not any(d.continues for d in directed.values()):
            messages = [message] if message is not None else []
            self.chains.hold(key, Chain(event.event_id, event.created_at, directed, messages))
        elif chain is None:
            return
        elif not directed and event.mentions:
            # Addressing someone else ends the run of fragments.
            self.chains.pop(key, None)
        elif message is not None and any(d.continues == chain.root for d in directed.values()):
            chain.messages.append(message)

    def _apply_edit(self, event: ChatEvent, decisions: list[Decision]) -> MessageRecord | None:
        """Fold an edit in; returns the record of the message it edits, if held."""
        target = self.target(event)
        if target is None or target.deleted:
            return target
        target.latest = event.event_id
        target.versions.append(event.event_id)
        target.text = event.text
        for decision in decisions:
            if decision.reason == "leave_requested":
                self.left.add((decision.agent, event.conversation.key))
        return target

    def _note_decisions(
        self, event: ChatEvent, decisions: list[Decision], target: MessageRecord | None
    ) -> None:
        """Keep each decision on the event's message record (`target`) and note what it owes."""
        by_human = event.author.kind is _HUMAN
        for decision in decisions:
            if target is not None:
                kept = kept_decision(decision, event)
                target.delivered[kept.agent] = kept
            self.note_owed(decision)
            if by_human and decision.mode in _TURNS and decision.continues is None:
                self.note_turn(decision.agent, event.author.id, event.created_at)
            if decision.reason == "loop_limit":
                self.escalated.add(event.conversation.key)

    def note_owed(self, decision: Decision) -> None:
        """An open obligation, when `decision`'s agent owes an answer (`Decision.owes_answer`)."""
        key = (decision.event_id, decision.agent)
        if decision.owes_answer and key not in self.obligations:
            self.obligations[key] = True
            self.busy[decision.agent] = self.busy.get(decision.agent, 0) + 1

    def note_claim(self, item: str, agent: str, expires: datetime) -> None:
        self.claims[item] = (agent, expires)

    def note_revised(self, event: ChatEvent, decision: Decision) -> None:
        """A pending decision was revised (`answered_in_gap`): no longer an open obligation."""
        if not decision.owes_answer:
            self.close_obligation(event.event_id, decision.agent)
        target = self.target(event)
        if target is not None and decision.agent in target.delivered:
            target.delivered[decision.agent] = decision

    def close_obligation(self, event_id: str, agent: str) -> None:
        """`agent` no longer owes `event_id` an answer (answered, revised, or deleted)."""
        if self.obligations.pop((event_id, agent), False):
            self.busy[agent] = max(0, self.busy.get(agent, 0) - 1)

    def note_disposition(
        self, event_id: str, message: str | None, agent: str, disposition: Disposition
    ) -> None:
        """An agent ended an event (about the message keyed `message`): its obligation
        closes, and an answer marks the message."""
        self.close_obligation(event_id, agent)
        target = self.messages.get(message) if message is not None else None
        if target is not None and disposition in _ANSWERED:
            target.answered.add(agent)
