"""Which reactions stand on which messages, per person and emoji, and in which add/remove cycle
of them, so that adding a reaction again is a new event (`ReactionMarks.generation`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from core.events import ChatEvent, EventKind

__all__ = ["ReactionMarks"]


@dataclass(slots=True)
class ReactionMarks:
    """Per (platform, conversation, message, person, emoji): whether the reaction is present,
    and its generation (how many times it has been added)."""

    marks: dict[tuple[str, ...], tuple[bool, int]] = field(default_factory=dict)

    def generation(self, event: ChatEvent) -> int:
        """Which add/remove cycle of one person's emoji on one message this event belongs to.

        A platform may give reactions no time, so adding, removing and adding the same emoji again
        would reuse one id; the second add is generation 2 (`…#2`) instead of a duplicate.
        Copies of one change from several connections fall into the same generation. A
        clearing (a removal with no author) counts as the add of a mark that the next real
        reaction on the message takes away again, so a second clearing is a new event too."""
        present, generation = self.marks.get(_reaction_key(event), (False, 0))
        if (event.kind is EventKind.REACTION_ADDED or not event.author.id) and not present:
            return generation + 1
        return max(generation, 1)

    def note(self, event: ChatEvent) -> None:
        """Fold one reaction added or removed (or a clearing, with no author) into the marks."""
        key = _reaction_key(event)
        present, generation = self.marks.get(key, (False, 0))
        adding = event.kind is EventKind.REACTION_ADDED
        if not event.author.id:
            self._clear(event)
            adding = True  # the clearing's own mark, see `generation`
        elif adding:
            self._unmark_clearings(event)
        self.marks[key] = (adding, generation + 1 if adding and not present else generation)

    def _clear(self, event: ChatEvent) -> None:
        """A moderator took every reaction, or every one of `event.reaction`, off a message:
        none of them is present any more, so adding one again is a new event."""
        message = (event.platform, event.conversation.id, event.message_id or "")
        emoji = event.reaction
        for key, (present, generation) in self.marks.items():
            if present and key[:3] == message and key[3] and (emoji is None or key[4] == emoji):
                self.marks[key] = (False, generation)

    def _unmark_clearings(self, event: ChatEvent) -> None:
        """A reaction added after a clearing: the next clearing is a new event."""
        platform, conversation, message = event.platform, event.conversation.id, event.message_id
        for emoji in ("", event.reaction or ""):
            key = (platform, conversation, message or "", "", emoji)
            mark = self.marks.get(key)
            if mark is not None and mark[0]:
                self.marks[key] = (False, mark[1])


def _reaction_key(event: ChatEvent) -> tuple[str, ...]:
    return (
        event.platform,
        event.conversation.id,
        event.message_id or "",
        event.author.id,
        event.reaction or "",
    )
