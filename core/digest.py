"""Digests: the periodic, host-written summary of what reached an agent only as `digest`.

The summary is built from a template, deterministically, from what the host knows: counts,
authors, host-generated topics and the source event ids. No message text goes into it and no
model is involved, so nothing untrusted is laundered through a summary.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["DigestItem", "summarise"]


@dataclass(frozen=True, slots=True)
class DigestItem:
    """One event folded into a digest: its id, author and host-generated topic."""

    event_id: str
    author: str
    topic: str


def summarise(conversation: str, items: Sequence[DigestItem], start: str, end: str) -> str:
    """The digest text for one conversation, e.g. `#C0OPS, 2026-01-01T00:00:00Z to
    2026-01-01T00:15:00Z: 3 messages from 2 authors (U0CI x2, U0ALICE x1); topics: a status
    update x2, a question x1; events: …`."""
    authors = Counter(item.author for item in items)
    topics = Counter(item.topic for item in items)
    noun = "message" if len(items) == 1 else "messages"
    who = ", ".join(f"{name} x{count}" for name, count in sorted(authors.items(), key=_rank))
    what = ", ".join(f"{topic} x{count}" for topic, count in sorted(topics.items(), key=_rank))
    ids = ", ".join(item.event_id for item in items)
    return (
        f"#{conversation}, {start} to {end}: {len(items)} {noun} from {len(authors)} "
        f"author{'s' if len(authors) != 1 else ''} ({who}); topics: {what}; events: {ids}"
    )


def _rank(pair: tuple[str, int]) -> tuple[int, str]:
    return (-pair[1], pair[0])
