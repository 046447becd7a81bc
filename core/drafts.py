"""The mark a streamed reply's message carries while it is still being written, and the
replies a stopped process left marked.

A reply shown as the model writes it (`harness_bridge.streamed_reply`) ends its message with
`WRITING` from its first post through every redraw; its final edit, with the whole text, takes
the mark away. A platform may read the mark too: the web chat shows an agent's edit of a message
still marked as a finish, not as an edit (`adapters.webchat.history`). A message left marked was
cut short (a crash, a kill of the process) and never passes for a whole answer: `cut_replies`
finds such replies among the outbox's newest actions, for the next start to finish them honestly
(`core.restart`). It goes by the post's record (`Post.writing`), not its text: a model's whole
answer may end with the same characters, and taken for a cut one it would be finished as cut and
asked again, answered twice. A reply the running process stops itself is finished at once with
what was written and why it ends there: `STOPPED` (the turn was told to stop, or every question
it answered was withdrawn) or `MODEL_FAILED`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from core.actions import Edit, Post
from core.store_records import OutboxEntry

__all__ = [
    "CUT_KEY",
    "CUT_SHORT",
    "MODEL_FAILED",
    "STOPPED",
    "TURN_FAILED",
    "WRITING",
    "CutReply",
    "cut_replies",
]

WRITING: Final = " …"
CUT_SHORT: Final = " [cut short: the host stopped before this answer was finished]"
STOPPED: Final = " [stopped]"  # the turn was stopped while it wrote: told to, or nothing left
MODEL_FAILED: Final = " [cut short: the model failed; ask again]"
TURN_FAILED: Final = (
    "I couldn't answer this: my model failed on it. Asking again in other words, or more "
    "briefly, may help."
)
"""What an agent says where it was asked when its turn failed before it answered a word
(`harness_bridge.runtime`)."""
CUT_KEY: Final = ":cut"  # the key of the edit finishing a cut reply: its post's, and this
_POST, _EDIT = Post.kind, Edit.kind  # how the outbox names an action's kind


@dataclass(frozen=True, slots=True)
class CutReply:
    """A streamed reply's message never finished: its `post` and the text shown of it last
    (its post's or its newest landed draft's, without the mark); `shown` is False when the
    post itself never landed."""

    post: OutboxEntry
    text: str
    shown: bool


def cut_replies(entries: Sequence[OutboxEntry]) -> list[CutReply]:
    """The replies among `entries` (oldest first) whose post was recorded `writing`, landed or
    still waiting to go, and has no final edit. A post whose sending may have landed
    (`ambiguous`, `sending`) is left to the outbox, which finds out first."""
    finished: set[str] = set()
    drawn: dict[str, str] = {}  # a post's key -> the text of its newest landed draft
    for entry in entries:
        if entry.action.get("action") != _EDIT:
            continue
        post_key, draft, _ = entry.key.rpartition(":draft:")
        if draft:
            if entry.status == "sent":
                drawn[post_key] = str(entry.action.get("text", ""))
        else:
            finished.add(_finished_post(entry.key))
    cut = []
    for entry in entries:
        text = str(entry.action.get("text", ""))
        if (
            entry.action.get("action") == _POST
            and _writing(entry.action, text)
            and entry.key not in finished
            and entry.status in ("sent", "pending")
        ):
            last = drawn.get(entry.key, text).removesuffix(WRITING)
            cut.append(CutReply(entry, last, shown=entry.status == "sent"))
    return cut


def _writing(record: Mapping[str, Any], text: str) -> bool:
    """Whether a post is the first words of a reply being written: as its record says, or, for
    one recorded before posts said so, as its mark says (a model's own text may end with
    `WRITING` too: only the record tells the two apart)."""
    return bool(record["writing"]) if "writing" in record else text.endswith(WRITING)


def _finished_post(key: str) -> str:
    """The post a final edit's key finishes: `<post>:edit:<digest>`, or `<post>` and `CUT_KEY`
    for the edit a start made of a cut reply."""
    if key.endswith(CUT_KEY):
        return key.removesuffix(CUT_KEY)
    return key.rpartition(":edit:")[0]
