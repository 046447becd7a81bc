"""What the delivery protocol allows a harness to receive twice, checked on a recording
harness's records (`eventId`, `attempt`, `pid`, `received`), in the order it received them.

A delivery is sent again only as a higher attempt of the same event: after a timeout, by the
same process; after the process stopped, by the next one, among the first it sends, the
deliveries that were in flight (at most a window's worth), in the order they were sent. Among
them, not only after them, may come deliveries the process before never sent: where two
processes append to one ledger, a lower sequence number can commit after a higher one was sent,
and the next process sends what is unacknowledged by sequence number (at most a window's worth
more, so every one made again comes within the first two windows)."""

from __future__ import annotations

import itertools
from typing import Any

from harness_bridge.delivery import DELIVERY_WINDOW


def assert_only_allowed_repeats(
    records: list[dict[str, Any]], window: int = DELIVERY_WINDOW
) -> int:
    """Fail unless every repeat in `records` is one the protocol allows; returns the repeats.
    Each process's records are taken in the order it received them (`received`, where the
    harness notes it: a record written after a reply is written late)."""
    last: dict[str, dict[str, Any]] = {}
    first_seen: dict[str, int] = {}
    repeats = 0
    runs = itertools.groupby(records, key=lambda r: r["pid"])
    received = [r for _, run in runs for r in sorted(run, key=lambda r: r.get("received", 0))]
    for _, run in itertools.groupby(enumerate(received), key=lambda r: r[1]["pid"]):
        again: list[str] = []
        for position, (n, record) in enumerate(run):
            event_id = record["eventId"]
            before = last.get(event_id)
            if before is None:
                first_seen[event_id] = n
            else:
                repeats += 1
                assert record["attempt"] > before["attempt"], (before, record)
                if before["pid"] != record["pid"]:  # in flight when the process before stopped
                    assert position < 2 * window and len(again) < window, (record, again)
                    again.append(event_id)
            last[event_id] = record
        assert again == sorted(again, key=first_seen.__getitem__), again
    assert len(last) == len(records) - repeats, "an event was delivered twice"
    return repeats
