"""The attention rules: for one event and one agent, directedness, policy, mode and reason.

Everything here is a pure function of the resolved event, the agent, and what the rules may
read of the world (`core.attention_context.Context`); the engine does the I/O (claims, the
ledger) around it. The rules, in the order they are tried, are listed in docs/attention.md;
each returns a `reason` word. The limits applied after them are `core.constraints`; decisions
revised after the fact (edits, answers in the gap) are `core.revisions`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from core.attention_context import Context
from core.closings import is_closing
from core.continuity import PARTNER, ROOM_STATEMENT, Cue
from core.decision import Decision, Directedness, InjectionMode, Policy, Priority
from core.events import AuthorKind, ChatEvent, ConversationKind, EventKind
from core.intent import Intent
from core.manifest import Workspace
from core.names import Naming
from core.signals import Signal

__all__ = [
    "Assessment",
    "ChatterShape",
    "assess",
    "chatter_shape",
    "follows_thread",
]

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


@dataclass(slots=True)
class Assessment:
    """A decision, and whether this agent is a candidate in choosing the event's one responder
    (a role mention, a group DM, a `select` broadcast or a question to the room in a channel
    that selects one agent for those)."""

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
        if agent in ctx.chain_answered:
            # C2A merges the fragments that come before an answer: after the agent's answer,
            # the person's next line is its partner's, which it may take up, not more of the
            # question it must answer (an unrelated line right after an answer was answered).
            return _plain(event, agent, TO_ME_LIKELY, MAY, BUFFERED, PARTNER)
        inherited = chain.decisions[agent]
        return Assessment(
            replace(inherited, event_id=event.event_id, reason="continuation", continues=chain.root)
        )
    other_users = [u for u in mentions.users if u not in (me, reply_author)]
    other_roles = [r for r in mentions.roles if r != my_role and not _binds(ws, platform, r, agent)]
    # Another agent named: it answers, and no role, crowd or group offers the event to others.
    other_agent = _addresses_another(ctx, agent) or any(
        ws.agent_for(platform, user) is not None for user in other_users
    )
    elsewhere = bool(other_users or other_roles) or event.reply_to is not None or other_agent
    thread, holder = ctx.thread, ctx.thread_holder
    in_thread = follows_thread(ctx, agent)
    if in_thread and thread is not None and not elsewhere and me is not None:
        author = event.author.id
        if thread.participants | {author} == {author, me}:
            return _directed(event, agent, "direct_thread_question", ctx)
    if not other_agent:
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
    agent's name typed in the text, the conversation it continues, a question to the room one
    agent is chosen to answer (`Context.room_question`), or chatter."""
    if ctx.named.get(agent) is _ADDRESSED:
        return _directed(event, agent, "named", ctx)
    if _addresses_another(ctx, agent):
        # "lead: ..." is for the lead as a mention of it would be: no one else's exchange
        return _undirected(event, agent, ctx, elsewhere=True)
    cue = ctx.cues.get(agent)
    if cue is not None and not (
        # a statement the scorer took is still a status or a thanks first, as before it
        cue.reason == ROOM_STATEMENT and (ctx.has_intent(_STATUS) or ctx.has_intent(Intent.THANKS))
    ):
        return _likely(event, agent, cue, ctx)
    if ctx.room_question:
        return _candidate(event, agent, "room_question")
    return _undirected(event, agent, ctx, elsewhere=False)


def _likely(event: ChatEvent, agent: str, cue: Cue, ctx: Context) -> Assessment:
    """A line probably for this agent by conversation continuity (`core.continuity`), or a
    question to the room the scorer (`core.scorer`) found likely for it: a turn the agent may
    answer, saying why, unless it is a closing (`core.closings`) or its burst already had one."""
    if ctx.has_intent(Intent.THANKS) or is_closing(event.text):
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
    if ctx.named or ctx.cues or ctx.room_question:
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


def _addresses_another(ctx: Context, agent: str) -> bool:
    """Whether the text addresses another agent by one of its names (`lead: ...`, `@Lead`)."""
    return any(how is _ADDRESSED and other != agent for other, how in ctx.named.items())


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
    if ctx.glyphs.is_stop(event.platform, emoji):
        return _plain(event, agent, TO_ME, ACK, IMMEDIATE, "stop", Priority.HIGH)
    signal = ctx.glyphs.signal_for(event.platform, emoji)
    if signal is Signal.AGREE:
        return _plain(event, agent, TO_ME, MAY, NOTIFY, "signal_agree")
    if signal is Signal.DECLINED:
        return _plain(event, agent, TO_ME, MAY, NOTIFY, "signal_declined")
    if signal is Signal.DONE:
        return _plain(event, agent, TO_ME, MUST_NOT, NOTIFY, "signal_done")
    return _plain(event, agent, TO_ME, MUST_NOT, MAILBOX, "reaction")
