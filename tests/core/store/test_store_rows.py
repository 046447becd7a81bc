"""What both SQL backends share (`core.store_rows`): a decision's row values, the deliveries'
INSERT and `seen_by`'s query, each written once for either placeholder."""

from __future__ import annotations

import pytest

from core.decision import Decision, Directedness, Disposition, InjectionMode, Policy, Priority
from core.store_rows import (
    DELIVERY_COLUMNS,
    FILLED_COLUMNS,
    decision_values,
    delivery_from_row,
    delivery_insert,
    seen_statement,
)


def test_a_decisions_values_follow_the_delivery_columns_enums_as_their_words() -> None:
    decision = Decision(
        "e1",
        "lead",
        Directedness.TO_ME,
        Policy.MUST_RESPOND,
        InjectionMode.BUFFERED,
        "direct_mention",
        Priority.HIGH,
        deadline_ms=300_000,
        supersedes="e0",
    )
    filled, optional = decision_values(7, decision)
    assert filled == (
        "e1",
        "lead",
        7,
        "to_me",
        "must_respond",
        "buffered",
        "direct_mention",
        "high",
    )
    assert optional == (300_000, None, None, "e0")
    assert len(filled) == len(FILLED_COLUMNS.split(","))
    assert len(filled + optional) == len(DELIVERY_COLUMNS.split(","))


def test_the_delivery_insert_has_a_placeholder_for_each_column_the_time_and_the_attempt() -> None:
    assert delivery_insert("%s") == (
        f"INSERT INTO deliveries ({DELIVERY_COLUMNS}, decided_at, attempt) "
        f"VALUES ({', '.join(['%s'] * 14)})"
    )
    assert delivery_insert("?", filled_only=True) == (
        "INSERT INTO deliveries (event_id, agent, seq, directedness, policy, mode, reason, "
        "priority, decided_at, attempt) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )


def test_seen_by_narrows_only_by_the_filters_given_its_arguments_in_placeholder_order() -> None:
    query, args = seen_statement(
        "?", "lead", 50, {"conversation": "C1", "thread": None, "before_seq": 9, "mode": None}
    )
    assert "WHERE d.agent = ? AND e.conversation = ? AND e.seq < ? ORDER BY" in query
    assert query.endswith("ORDER BY e.seq DESC LIMIT ?")
    assert query.count("?") == len(args)
    assert args == ("lead", "C1", 9, 50)


def test_seen_by_with_no_filter_asks_only_for_the_agent() -> None:
    query, args = seen_statement("%s", "lead", 5, {})
    assert "WHERE d.agent = %s ORDER BY e.seq DESC LIMIT %s" in query
    assert args == ("lead", 5)


def test_a_delivery_row_reads_back_every_word_of_each_enum_and_refuses_an_unknown_one() -> None:
    kinds = (Directedness, Policy, InjectionMode, Priority, Disposition)
    for n in range(max(len(kind) for kind in kinds)):
        directedness, policy, mode, priority, disposition = (
            list(kind)[n % len(kind)] for kind in kinds
        )
        decision = Decision("e1", "lead", directedness, policy, mode, "why", priority)
        filled, optional = decision_values(n, decision)
        delivery = delivery_from_row((*filled, *optional, "delivered", 2, str(disposition)))
        assert (delivery.decision, delivery.seq, delivery.disposition) == (
            decision,
            n,
            disposition,
        )
        assert delivery.decision.policy is policy and delivery.disposition is disposition
    unknown = (*filled[:4], "nobody's", *filled[5:], *optional, "pending", 0, None)
    with pytest.raises(ValueError, match="not a valid Policy"):
        delivery_from_row(unknown)
