"""What the attention rules may read when deciding one event: the `Context`, built once per
event with the facts that are the same for every agent (who wrote it, what it replies to, the
run of fragments, the thread, the agents named or likely meant), and its intents, read lazily.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Final

from core.closings import is_closing
from core.continuity import ASKS_THE_ROOM, ROOM_QUESTION, SCORED, Cue
from core.events import AuthorKind, ChatEvent, ConversationKind, EventKind
from core.intent import Intent, IntentClassifier
from core.manifest import ChannelConfig, Workspace
from core.names import Naming
from core.scorer import Scorer
from core.signals import GlyphMap
from core.state import State
from core.state_records import Chain, MessageRecord, ThreadRecord

__all__ = ["Context"]

_MESSAGE, _EDIT = EventKind.MESSAGE, EventKind.EDIT
_CHANNEL = ConversationKind.CHANNEL
_HUMAN = AuthorKind.HUMAN
_ADDRESSED = Naming.ADDRESSED


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
    platform: Final[str]  # whose markup `text` is written in
    glyphs: Final[GlyphMap]
    now: Final[datetime]
    author_agent: Final[str | None] = None
    replied: Final[MessageRecord | None] = None
    reply_author: Final[str | None] = None
    roles_named: Final[tuple[str, ...]] = ()
    chain: Final[Chain | None] = None
    chain_answered: Final[frozenset[str]] = frozenset()  # agents that answered the run already
    thread: Final[ThreadRecord | None] = None
    thread_holder: Final[str | None] = None
    channel: Final[ChannelConfig] = field(default_factory=ChannelConfig)
    named: Final[Mapping[str, Naming]] = field(default_factory=dict)  # agents named in the text
    cues: Final[Mapping[str, Cue]] = field(default_factory=dict)  # agents it is likely for
    # A question to the room no rule or score gave anyone, in a channel where one agent is
    # then chosen to answer it (`questions: select`).
    room_question: Final[bool] = False
    _intents: frozenset[Intent] | None = field(default=None, init=False, repr=False)

    def intents(self) -> frozenset[Intent]:
        """The event's intents, read the first time they are asked for: deciding chatter that
        names someone else never asks."""
        if self._intents is None:
            text = self.text
            self._intents = (
                self.classifier.classify(text, self.platform) if text is not None else frozenset()
            )
        return self._intents

    def has_intent(self, intent: Intent) -> bool:
        """Whether the event has `intent`, reading that one alone unless all are known: most
        chatter is asked only whether it is a status."""
        if self._intents is not None:
            return intent in self._intents
        return self.text is not None and self.classifier.has(self.text, intent, self.platform)

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
        thread = state.thread(event)
        text = event.text if event.kind is _MESSAGE or event.kind is _EDIT else None
        author_agent = workspace.agent_for(event.platform, event.author.id)
        channel = workspace.channel(conversation.scope)
        named: Mapping[str, Naming] = {}
        cues: Mapping[str, Cue] = {}
        room_question = False
        if event.author.kind is _HUMAN and author_agent is None:
            if event.text and state.names.anywhere is not None:
                named = state.names.find(event.text)
                if named:
                    text = state.names.without(text) if text is not None else None
                if _ADDRESSED in named.values():
                    chain = None  # addressed by name: no fragment of what went before
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
                    offered = cues
                    cues = _scored(cues, scorer)
                    room_question = (
                        channel.questions == "select"
                        and not named
                        and _unclaimed(offered, cues)
                        and _asks(event.text, event.platform, classifier)
                    )
        return cls(
            workspace=workspace,
            state=state,
            classifier=classifier,
            text=text,
            platform=event.platform,
            glyphs=glyphs,
            now=now,
            author_agent=author_agent,
            replied=replied,
            reply_author=event.target_author_id or (replied.author_id if replied else None),
            roles_named=workspace.roles_named(event.platform, event.mentions.roles)
            if event.mentions.roles
            else (),
            chain=chain,
            chain_answered=_answered(chain, state) if chain is not None else frozenset(),
            thread=thread,
            thread_holder=state.claim_holder(conversation.key, now) if thread else None,
            channel=channel,
            named=named,
            cues=cues,
            room_question=room_question,
        )


def _scored(cues: Mapping[str, Cue], scorer: Scorer) -> dict[str, Cue]:
    """The cues that stand: continuity's rules (the partner, an answer to the agent's line, its
    name in the text) always, a question to the room only when the scorer finds it likely for
    the agent (and not in a burst that already gave the agent a turn); the rest is chatter."""
    return {
        agent: cue
        for agent, cue in cues.items()
        if cue.reason not in SCORED or (not cue.burst_turned and scorer.likely(cue))
    }


def _unclaimed(offered: Mapping[str, Cue], kept: Mapping[str, Cue]) -> bool:
    """Whether a line is a question to the room that nobody is likely to take up: every agent's
    cue was that, the scorer kept none, and the asker's burst gave no agent a turn yet (a line
    naming an agent is never one: the caller checks)."""
    return (
        not kept
        and bool(offered)
        and all(c.reason == ROOM_QUESTION and not c.burst_turned for c in offered.values())
    )


def _asks(text: str, platform: str, classifier: IntentClassifier) -> bool:
    """Whether a line that reads as a cue to the room (a `?`, `everyone`, `who`) really asks
    it something: a question by its intents, and no thanks or closing. "hi everyone", "thanks
    everyone", "ok everyone, standup at 3" and "the one who fixed it left" ask no one."""
    intents = classifier.classify(text, platform)
    return Intent.QUESTION in intents and Intent.THANKS not in intents and not is_closing(text)


# A message that asks the room ("lunch anyone?", "who is around?") is nobody's fragment: it
# never continues the same person's earlier mention.
_ASKS_THE_ROOM: Final = ASKS_THE_ROOM


def _answered(chain: Chain, state: State) -> frozenset[str]:
    """The agents of a run of fragments that have answered one of its messages."""
    answered: set[str] = set()
    for key in chain.messages:
        message = state.messages.get(key)
        if message is not None:
            answered |= message.answered
    return frozenset(answered.intersection(chain.decisions))
