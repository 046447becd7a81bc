"""The attention rules: for one event and one agent, directedness, policy, mode and reason.

Everything here is a pure function of the resolved event, the agent, and a read-only view of
the engine's state; the engine does the I/O (claims, the ledger) around it. The rules, in the
order they are tried, are listed in docs/attention.md; each returns a `reason` word.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Final

from core.continuity import ASKS_THE_ROOM, ROOM_QUESTION, Cue
from core.decision import Decision, Directedness, InjectionMode, Policy, Priority
from core.events import AuthorKind, ChatEvent, ConversationKind, EventKind
from core.intent import Intent, IntentClassifier
from core.manifest import ChannelConfig, Workspace
from core.names import Naming
from core.scorer import Scorer
from core.signals import GlyphMap, Signal, is_stop_reaction
from core.state import Chain, MessageRecord, State, ThreadRecord

__all__ = [
    "LATE_AFTER",
    "Assessment",
    "ChatterShape",
    "Context",
    "answered_in_gap",
    "assess",
    "chatter_shape",
    "constrain",
    "follows_thread",
    "is_late",
    "revise_for_edit",
    "select_responder",
]

LATE_AFTER: Final = timedelta(minutes=1)
"""An event the host received more than this after it was sent is late (`is_late`)."""

TO_ME = Directedness.TO_ME
TO_MY_ROLE = Directedness.TO_MY_ROLE
TO_OTHER = Directedness.TO_OTHER
TO_ME_LIKELY = Directedness.TO_ME_LIKELY
AMBIENT = Directedness.AMBIENT
MUST = Policy.MUST_RESPOND
MAY = Policy.MAY_RESPOND
ACK = Policy.ACK_ONLY
MUST_NOT = Policy.MUST_NOT_RESPOND
BUFFERED = InjectionMode.BUFFERED
IMMEDIATE = InjectionMode.IMMEDIATE
NOTIFY = InjectionMode.NOTIFY
MAILBOX = InjectionMode.TOOL_MAILBOX
SILENT = InjectionMode.SILENT

_MESSAGE, _EDIT = EventKind.MESSAGE, EventKind.EDIT
_REACTION_ADDED, _REACTION_REMOVED = EventKind.REACTION_ADDED, EventKind.REACTION_REMOVED
_DM, _CHANNEL = ConversationKind.DM, ConversationKind.CHANNEL
_BOT = AuthorKind.BOT
_HUMAN = AuthorKind.HUMAN
_ADDRESSED = Naming.ADDRESSED
_STATUS = Intent.STATUS
_AMBIENT_MODES = {mode.value: mode for mode in InjectionMode}

# Reasons that survive having left a conversation: only being named or DMed brings an agent back.
_RECALLED = frozenset({"direct_message", "direct_mention"})


@dataclass(slots=True)
class Context:
    """What the rules may read about the world when deciding one event.

    Besides the world (`workspace`, `state`, `now`), it carries the facts about the event that
    are the same for every agent, worked out once by `Context.build`, and its intents, read
    from `text` by `classifier` when first asked for. Immutable through its `Final` fields
    (see `core.events.ChatEvent`).
    """

    workspace: Final[Workspace]
    state: Final[State]
    classifier: Final[IntentClassifier]
    text: Final[str | None]  # what the intents are read from; None for an event without text
    glyphs: Final[GlyphMap]
    now: Final[datetime]
    author_agent: Final[str | None] = None
    replied: Final[MessageRecord | None] = None
    reply_author: Final[str | None] = None
    roles_named: Final[tuple[str, ...]] = ()
    chain: Final[Chain | None] = None
    thread: Final[ThreadRecord | None] = None
    thread_holder: Final[str | None] = None
    channel: Final[ChannelConfig] = field(default_factory=ChannelConfig)
    named: Final[Mapping[str, Naming]] = field(default_factory=dict)  # agents named in the text
    cues: Final[Mapping[str, Cue]] = field(default_factory=dict)  # agents it is likely for
    _intents: frozenset[Intent] | None = field(default=None, init=False, repr=False)

    def intents(self) -> frozenset[Intent]:
        """The event's intents, read the first time they are asked for: deciding chatter that
        names someone else never asks."""
        if self._intents is None:
            text = self.text
            self._intents = self.classifier.classify(text) if text is not None else frozenset()
        return self._intents

    def has_intent(self, intent: Intent) -> bool:
        """Whether the event has `intent`, reading that one alone unless all are known: most
        chatter is asked only whether it is a status."""
        if self._intents is not None:
            return intent in self._intents
        return self.text is not None and self.classifier.has(self.text, intent)

    @classmethod
    def build(
        cls,
        event: ChatEvent,
        workspace: Workspace,
        state: State,
        classifier: IntentClassifier,
        glyphs: GlyphMap,
        now: datetime,
    ) -> Context:
        conversation = event.conversation
        replied = state.replied_message(event)
        chain = state.chains.get((conversation.key, event.author.id))
        if chain is not None and (
            event.mentions
            or event.reply_to is not None
            or _ASKS_THE_ROOM.search(event.text) is not None
            or event.created_at - chain.started
            > timedelta(milliseconds=workspace.settings.merge_window_ms)
        ):
            chain = None
        thread = state.thread(conversation)
        text = event.text if event.kind is _MESSAGE or event.kind is _EDIT else None
        author_agent = workspace.agent_for(event.platform, event.author.id)
        named: Mapping[str, Naming] = {}
        cues: Mapping[str, Cue] = {}
        if event.author.kind is _HUMAN and author_agent is None:
            if event.text and state.names.anywhere is not None:
                named = state.names.find(event.text)
                if named:
                    text = state.names.without(text) if text is not None else None
            if (
                event.kind is _MESSAGE
                and conversation.kind is _CHANNEL
                and not event.mentions
                and event.reply_to is None
            ):
                mentioned = (
                    tuple(a for a, how in named.items() if how is not _ADDRESSED) if named else ()
                )
                scorer = state.scorer
                cues = state.continuity.cues(
                    event, workspace.agent_ids, mentioned, room=scorer is not None
                )
                if scorer is not None and cues:
                    cues = _scored(cues, scorer)
        return cls(
            workspace=workspace,
            state=state,
            classifier=classifier,
            text=text,
            glyphs=glyphs,
            now=now,
            author_agent=author_agent,
            replied=replied,
            reply_author=event.target_author_id or (replied.author_id if replied else None),
            roles_named=workspace.roles_named(event.platform, event.mentions.roles)
            if event.mentions.roles
            else (),
            chain=chain,
            thread=thread,
            thread_holder=state.claim_holder(conversation.key, now) if thread else None,
            channel=workspace.channel(conversation.scope),
            named=named,
            cues=cues,
        )


def _scored(cues: Mapping[str, Cue], scorer: Scorer) -> dict[str, Cue]:
    """The cues that stand: continuity's rules (the partner, an answer to the agent's line, its
    name in the text) always, a question to the room only when the scorer finds it likely for
    the agent (and not in a burst that already gave the agent a turn); the rest is chatter."""
    return {
        agent: cue
        for agent, cue in cues.items()
        if cue.reason != ROOM_QUESTION or (not cue.burst_turned and scorer.likely(cue))
    }


# A message that asks the room ("lunch anyone?", "who is around?") is nobody's fragment: it
# never continues the same person's earlier mention.
_ASKS_THE_ROOM: Final = ASKS_THE_ROOM


@dataclass(slots=True)
class Assessment:
    """A decision, and whether this agent is a candidate in choosing the event's one responder
    (a role mention, a group DM or a `select` broadcast)."""

    decision: Final[Decision]
    candidate: Final[bool] = False


def assess(event: ChatEvent, agent: str, ctx: Context) -> Assessment:
    """Decide one event for one agent before claims and constraints. `event` is resolved and
    `ctx` was built for it."""
    if ctx.author_agent == agent:
        return _plain(event, agent, AMBIENT, MUST_NOT, SILENT, "own_message")
    kind = event.kind
    if kind is _MESSAGE or kind is _EDIT:
        return _assess_message(event, agent, ctx)
    if kind is _REACTION_ADDED or kind is _REACTION_REMOVED:
        return _assess_reaction(event, agent, ctx)
    reason = "thread_created" if kind is EventKind.THREAD_CREATED else "membership"
    return _plain(event, agent, AMBIENT, MUST_NOT, SILENT, reason)


def _plain(
    event: ChatEvent,
    agent: str,
    directedness: Directedness,
    policy: Policy,
    mode: InjectionMode,
    reason: str,
    priority: Priority = Priority.NORMAL,
) -> Assessment:
    return Assessment(Decision(event.event_id, agent, directedness, policy, mode, reason, priority))


def _assess_message(event: ChatEvent, agent: str, ctx: Context) -> Assessment:
    ws = ctx.workspace
    author_agent = ctx.author_agent
    author_kind = event.author.kind
    if author_kind is _BOT and author_agent is None and not ws.trusted_bot(event.author.id):
        return _plain(event, agent, AMBIENT, MUST_NOT, MAILBOX, "untrusted_bot")
    conversation, mentions = event.conversation, event.mentions
    kind = conversation.kind
    if kind is _DM and not conversation.group and author_kind is _HUMAN:
        # Only a person's DM obliges an answer; an agent's or a bot's follows the same rules
        # as its messages in a channel, so two bots in a DM do not answer each other forever.
        return _directed(event, agent, "direct_message", ctx)
    chain = ctx.chain
    if (
        not mentions
        and event.reply_to is None
        and kind is _CHANNEL
        and (chain is None or agent not in chain.decisions)
    ):
        # A plain channel line: nothing below can apply, so skip straight to the end.
        return _flat(event, agent, ctx)
    platform = event.platform
    me = ws.user_id(platform, agent)
    my_role = ws.managed_role(platform, agent)
    if me in mentions.users or (my_role is not None and my_role in mentions.roles):
        return _directed(event, agent, "direct_mention", ctx)
    replied, reply_author = ctx.replied, ctx.reply_author
    replied_to_me = event.reply_to is not None and (
        reply_author == me or (replied is not None and replied.author_agent == agent)
    )
    if replied_to_me:
        return _directed(event, agent, "reply_to_me", ctx)
    if ctx.named.get(agent) is _ADDRESSED:
        return _directed(event, agent, "named", ctx)
    if chain is not None and agent in chain.decisions:
        if ctx.has_intent(Intent.THANKS):
            # "thanks!" after a question is not more of the question: it is a thanks to the
            # agent the question was for.
            return _directed(event, agent, "continuation", ctx)
        inherited = chain.decisions[agent]
        return Assessment(
            replace(inherited, event_id=event.event_id, reason="continuation", continues=chain.root)
        )
    other_users = [u for u in mentions.users if u not in (me, reply_author)]
    other_roles = [r for r in mentions.roles if r != my_role and not _binds(ws, platform, r, agent)]
    elsewhere = bool(other_users or other_roles) or event.reply_to is not None
    thread, holder = ctx.thread, ctx.thread_holder
    in_thread = follows_thread(ctx, agent)
    if in_thread and thread is not None and not elsewhere and me is not None:
        author = event.author.id
        if thread.participants | {author} == {author, me}:
            return _directed(event, agent, "direct_thread_question", ctx)
    my_roles = tuple(r for r in ctx.roles_named if agent in ws.agents_by_role.get(r, ()))
    if my_roles:
        return _candidate(event, agent, "role_mention")
    if kind is _DM and conversation.group:
        return _candidate(event, agent, "group_dm")
    if mentions.broadcast and ctx.channel.broadcast == "select":
        return _candidate(event, agent, "broadcast")
    if in_thread and not elsewhere:
        if holder is not None and holder != agent:
            decision = Decision(
                event.event_id, agent, TO_MY_ROLE, MUST_NOT, NOTIFY, "claimed_by_other"
            )
            return Assessment(replace(decision, claimed_by=holder))
        if ctx.has_intent(Intent.THANKS):
            return _plain(event, agent, TO_MY_ROLE, MUST_NOT, MAILBOX, "thanks")
        return _plain(event, agent, TO_MY_ROLE, MAY, NOTIFY, "thread_participant")
    return _undirected(event, agent, ctx, elsewhere=elsewhere)


def _flat(event: ChatEvent, agent: str, ctx: Context) -> Assessment:
    """A channel line that names no user, role or crowd natively and replies to nothing: the
    agent's name typed in the text, the conversation it continues, or chatter."""
    if ctx.named.get(agent) is _ADDRESSED:
        return _directed(event, agent, "named", ctx)
    cue = ctx.cues.get(agent)
    if cue is not None:
        return _likely(event, agent, cue, ctx)
    return _undirected(event, agent, ctx, elsewhere=False)


def _likely(event: ChatEvent, agent: str, cue: Cue, ctx: Context) -> Assessment:
    """A line probably for this agent by conversation continuity (`core.continuity`), or a
    question to the room the scorer (`core.scorer`) found likely for it: a turn the agent may
    answer, saying why, unless it is a closing or its burst already had one."""
    if ctx.has_intent(Intent.THANKS):
        return _plain(event, agent, TO_ME_LIKELY, MUST_NOT, MAILBOX, "thanks")
    if cue.burst_turned:
        return _plain(event, agent, TO_ME_LIKELY, MAY, MAILBOX, "same_burst")
    return _plain(event, agent, TO_ME_LIKELY, MAY, BUFFERED, cue.reason)


def follows_thread(ctx: Context, agent: str) -> bool:
    """Whether the agent follows the event's thread: it started it, posted in it or claimed it."""
    thread = ctx.thread
    return thread is not None and (
        thread.owner == agent or agent in thread.agents or ctx.thread_holder == agent
    )


def _undirected(event: ChatEvent, agent: str, ctx: Context, *, elsewhere: bool) -> Assessment:
    """The end of the rules: for someone else, another agent's note, a status, or chatter."""
    if elsewhere:
        return _plain(event, agent, TO_OTHER, MUST_NOT, MAILBOX, "addressed_to_other")
    if ctx.author_agent is not None or event.author.kind is _BOT:
        return _plain(event, agent, TO_OTHER, MUST_NOT, MAILBOX, "agent_message")
    channel = ctx.channel
    override = channel.agents.get(agent) if channel.agents else None
    mode = _AMBIENT_MODES[(override and override.ambient_mode) or channel.ambient_mode]
    if ctx.has_intent(_STATUS):
        reason = "status_broadcast"
        if mode is MAILBOX:
            mode = InjectionMode.DIGEST
    else:
        reason = "unaddressed"
    return _plain(event, agent, AMBIENT, MUST_NOT, mode, reason, Priority.LOW)


ChatterShape = tuple[str, str | None, AuthorKind, bool, bool, bool]


def chatter_shape(event: ChatEvent, ctx: Context) -> ChatterShape | None:
    """What the rules read of plain channel chatter, or None when the event is not that.

    Plain chatter is a message with its text in a channel (not a thread or DM) that replies
    to nothing, continues no run of fragments and names no agent, role or crowd: at most some
    people. For it the rules and the constraints read only the channel (its settings), which
    agent wrote it if any, the author's kind, whether a bot author is trusted, and whether it
    names anyone, else whether it is a status: the shape. Every agent's decision on it is the
    same for every event of the same shape, bar the event id, and always `must_not_respond`, so
    no state (budgets, loops, leaving) and no claim comes into it.
    """
    mentions = event.mentions
    if (
        event.kind is not _MESSAGE
        or event.conversation.kind is not _CHANNEL
        or event.reply_to is not None
        or event.target_author_id is not None
        or event.content_withheld
        or ctx.chain is not None
        or mentions.roles
        or mentions.broadcast
    ):
        return None
    ws, platform = ctx.workspace, event.platform
    if any(ws.agent_for(platform, user) is not None for user in mentions.users):
        return None
    if ctx.named or ctx.cues:
        return None
    author = event.author
    names_people = bool(mentions.users)  # then the rules never read its intents
    return (
        event.conversation.scope,
        ctx.author_agent,
        author.kind,
        author.kind is _BOT and ws.trusted_bot(author.id),
        names_people,
        not names_people and ctx.has_intent(_STATUS),
    )


def _binds(ws: Workspace, platform: str, group: str, agent: str) -> bool:
    return any(agent in ws.agents_by_role.get(r, ()) for r in ws.roles_named(platform, (group,)))


def _candidate(event: ChatEvent, agent: str, reason: str) -> Assessment:
    decision = Decision(event.event_id, agent, TO_MY_ROLE, MAY, NOTIFY, reason)
    return Assessment(decision, candidate=True)


def _directed(event: ChatEvent, agent: str, reason: str, ctx: Context) -> Assessment:
    """A message aimed at this agent: intent decides policy, mode and priority."""
    intents = ctx.intents()
    if Intent.THANKS in intents:
        return _plain(event, agent, TO_ME, ACK, NOTIFY, "thanks")
    if Intent.LEAVE in intents:
        return _plain(event, agent, TO_ME, ACK, NOTIFY, "leave_requested")
    if Intent.STOP in intents:
        return _plain(event, agent, TO_ME, ACK, IMMEDIATE, "stop", Priority.HIGH)
    if Intent.URGENT in intents:
        return _plain(event, agent, TO_ME, MUST, IMMEDIATE, "urgent", Priority.URGENT)
    if Intent.APPROVAL in intents:
        return _plain(event, agent, TO_ME, MUST, IMMEDIATE, "approval", Priority.HIGH)
    return _plain(event, agent, TO_ME, MUST, BUFFERED, reason)


def _assess_reaction(event: ChatEvent, agent: str, ctx: Context) -> Assessment:
    """A reaction on this agent's own message is a signal to it; any other is ambient."""
    ws = ctx.workspace
    target = ctx.state.target(event)
    me = ws.user_id(event.platform, agent)
    mine = (event.target_author_id is not None and event.target_author_id == me) or (
        target is not None and target.author_agent == agent
    )
    if not mine:
        return _plain(event, agent, AMBIENT, MUST_NOT, SILENT, "reaction_elsewhere")
    if event.kind is EventKind.REACTION_REMOVED:
        return _plain(event, agent, TO_ME, MUST_NOT, MAILBOX, "reaction_removed")
    emoji = event.reaction or ""
    if is_stop_reaction(event.platform, emoji):
        return _plain(event, agent, TO_ME, ACK, IMMEDIATE, "stop", Priority.HIGH)
    signal = ctx.glyphs.signal_for(event.platform, emoji)
    if signal is Signal.AGREE:
        return _plain(event, agent, TO_ME, MAY, NOTIFY, "signal_agree")
    if signal is Signal.DECLINED:
        return _plain(event, agent, TO_ME, MAY, NOTIFY, "signal_declined")
    if signal is Signal.DONE:
        return _plain(event, agent, TO_ME, MUST_NOT, NOTIFY, "signal_done")
    return _plain(event, agent, TO_ME, MUST_NOT, MAILBOX, "reaction")


def constrain(assessment: Assessment, event: ChatEvent, agent: str, ctx: Context) -> Assessment:
    """Apply the limits that override the rules: mutes, leaving, loops, access, deadlines and
    turn budgets. Only messages and edits are constrained."""
    decision = assessment.decision
    if event.kind not in (EventKind.MESSAGE, EventKind.EDIT) or decision.reason == "own_message":
        return assessment
    ws, state = ctx.workspace, ctx.state
    conversation = event.conversation
    channel = ctx.channel.agents.get(agent) if ctx.channel.agents else None
    if channel is not None and channel.mute and decision.directedness is not TO_ME:
        return Assessment(_quiet(decision, SILENT, "muted"))
    active = decision.policy is not MUST_NOT
    if not active:
        # Nothing below loosens a decision, and a must_not_respond cannot get stricter.
        return assessment
    if decision.reason not in _RECALLED and (
        (agent, conversation.key) in state.left or (agent, conversation.scope) in state.left
    ):
        return Assessment(_quiet(decision, MAILBOX, "left_conversation"))
    bot_like = event.author.kind in (AuthorKind.AGENT, AuthorKind.BOT)
    if bot_like and state.streaks.get(conversation.key, 0) >= ws.settings.loop_rounds:
        return Assessment(_quiet(decision, MAILBOX, "loop_limit"))
    if event.author.kind is AuthorKind.HUMAN and decision.directedness in (TO_ME, TO_MY_ROLE):
        refusal = _refused(event, agent, decision, ws)
        if refusal is not None:
            return Assessment(_quiet(decision, MAILBOX, refusal))
    if decision.policy is MUST:
        age = ctx.now - event.created_at
        if age > timedelta(milliseconds=ws.settings.deadline_ms):
            decision = replace(decision, policy=MAY, reason="expired")
        else:
            decision = replace(decision, deadline_ms=ws.settings.deadline_ms)
    if (
        decision.mode in (BUFFERED, IMMEDIATE)
        and event.author.kind is AuthorKind.HUMAN
        and decision.policy in (MUST, MAY)
    ):
        budget = ws.budget(agent)
        used = state.open_turns(agent, event.author.id, ctx.now, timedelta(seconds=budget.window_s))
        if used >= budget.turns:
            decision = replace(decision, mode=MAILBOX, reason="over_budget")
    return Assessment(decision, assessment.candidate)


def _quiet(decision: Decision, mode: InjectionMode, reason: str) -> Decision:
    return replace(decision, policy=MUST_NOT, mode=mode, reason=reason, deadline_ms=None)


def _refused(event: ChatEvent, agent: str, decision: Decision, ws: Workspace) -> str | None:
    access = ws.access(agent)
    if event.author.external and not access.external:
        return "external_author"
    allowed = access.dm if decision.reason == "direct_message" else access.mention
    if allowed != "*" and event.author.id not in allowed:
        return "not_allowed"
    return None


def revise_for_edit(
    decision: Decision, prior: Decision | None, answered: bool, supersedes: str | None
) -> Decision:
    """An edit's decision: `edited_after_response` once the agent answered the earlier version
    (then `may_respond` at most, unless the edit newly addresses the agent), else
    `edited_before_injection` with the edited text decided afresh."""
    if decision.reason == "own_message":
        return replace(decision, supersedes=supersedes)
    if not answered:
        return replace(decision, reason="edited_before_injection", supersedes=supersedes)
    newly_addressed = decision.directedness is TO_ME and (
        prior is None or prior.directedness is not TO_ME
    )
    policy = decision.policy
    if policy is MUST and not newly_addressed:
        policy = MAY
    return replace(decision, policy=policy, reason="edited_after_response", supersedes=supersedes)


def is_late(event: ChatEvent, received: datetime) -> bool:
    """Whether the host received `event` more than `LATE_AFTER` after it was sent: read from
    history after an outage, replayed by a resumed gateway, or sent again by the platform."""
    return received - event.created_at > LATE_AFTER


def answered_in_gap(
    decision: Decision,
    question: ChatEvent,
    received: datetime,
    reply: ChatEvent,
    ctx: Context,
) -> Decision | None:
    """A question already answered in the gap is not answered again: the `must_respond`
    `decision` on a late `question` (received at `received`), not yet delivered, once `reply`,
    late too, is another person's answer to it, becomes `may_respond` for `answered_in_gap`;
    None when the rule does not apply. Live events are never revised here.

    An answer is a message from a person (not an agent, not a bot, not the asker), sent after
    the question, that is a reply to it: a reply in its thread (a Slack thread reply to the
    question or after it in the same thread, any later message in the same Discord thread), a
    reply reference to it, or, in a channel without threads, a message that mentions the
    asker.
    """
    if (
        decision.policy is not MUST
        or question.kind is not _MESSAGE
        or reply.kind is not _MESSAGE
        or not is_late(question, received)
        or not is_late(reply, ctx.now)
        or reply.author.kind is not _HUMAN
        or ctx.author_agent is not None
        or reply.author.id == question.author.id
        or reply.created_at <= question.created_at
        or not _replies_to(reply, question)
    ):
        return None
    return replace(decision, policy=MAY, reason="answered_in_gap", deadline_ms=None)


def _replies_to(reply: ChatEvent, question: ChatEvent) -> bool:
    """Whether `reply` answers `question` by where it was said (see `answered_in_gap`)."""
    if question.message_id is not None and reply.reply_to == question.message_id:
        return True
    asked, said = question.conversation, reply.conversation
    if said.id != asked.id:
        return False
    if said.kind is ConversationKind.THREAD:
        # In the question's thread, or in the thread the question started (a Slack root).
        return said.key == asked.key or (
            asked.thread_id is None and said.thread_id == question.message_id
        )
    return (
        asked.kind is _CHANNEL
        and said.kind is _CHANNEL
        and asked.thread_id is None
        and question.author.id in reply.mentions.users
    )


def select_responder(
    candidates: Sequence[str], busy: Mapping[str, int], selection: str, order: Sequence[str]
) -> str:
    """The one agent a role mention, group DM or broadcast goes to.

    `least_busy`: fewest open `must_respond` obligations, ties broken by manifest order;
    `order`: the first candidate in manifest order. Deterministic for the same inputs.
    """
    ordered = [a for a in order if a in candidates] or list(candidates)
    if selection == "least_busy":
        return min(ordered, key=lambda a: (busy.get(a, 0), ordered.index(a)))
    return ordered[0]
