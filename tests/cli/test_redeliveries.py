"""The check of what a recording harness may receive twice (`redeliveries.py`) reads each
process's records in the order it received them, not the order it wrote them."""

from __future__ import annotations

from typing import Any

import pytest
from redeliveries import assert_only_allowed_repeats


def records(order: list[tuple[str, int, int, int]]) -> list[dict[str, Any]]:
    """Lines as written: (event, attempt, pid, place received)."""
    return [{"eventId": e, "attempt": a, "pid": p, "received": n} for e, a, p, n in order]


def test_a_line_written_late_after_a_reply_is_read_where_it_was_received() -> None:
    # Process 1 got a, b, c and died with all three in flight; process 2 got them again in
    # that order, but b is one it answers, so b's line was written after c's.
    written = [
        ("a", 1, 1, 0),
        ("b", 1, 1, 1),
        ("c", 1, 1, 2),
        ("a", 2, 2, 0),
        ("c", 2, 2, 2),
        ("b", 2, 2, 1),
        ("d", 1, 2, 3),
    ]
    assert assert_only_allowed_repeats(records(written)) == 3


def test_deliveries_made_again_out_of_the_order_received_are_still_refused() -> None:
    written = [("a", 1, 1, 0), ("b", 1, 1, 1), ("b", 2, 2, 0), ("a", 2, 2, 1)]
    with pytest.raises(AssertionError):
        assert_only_allowed_repeats(records(written))


def test_one_never_sent_may_come_among_those_made_again_but_not_long_before_one() -> None:
    """Two processes on one ledger: `b` committed after `c` was sent, so the process before
    never sent it; the next sends by sequence number, `b` among the deliveries made again. A
    delivery made again two windows into what the next process received is refused."""
    written = [("a", 1, 1, 0), ("c", 1, 1, 1), ("a", 2, 2, 0), ("b", 2, 2, 1), ("c", 2, 2, 2)]
    assert assert_only_allowed_repeats(records(written)) == 2
    late = [("a", 1, 1, 0), *((f"n{i}", 1, 2, i) for i in range(4)), ("a", 2, 2, 4)]
    with pytest.raises(AssertionError):
        assert_only_allowed_repeats(records(late), window=2)
