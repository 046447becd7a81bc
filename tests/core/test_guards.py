"""The rules of what an agent may say, called with plain values: what a reaction records, what
a turn still owes, whom a post mentions, and the send budget."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from builders import local_workspace

from core.decision import Decision, Directedness, Disposition, InjectionMode, Policy
from core.errors import ToolError
from core.guards import (
    SendBudget,
    check_answerable,
    check_reply,
    derived_key,
    is_owed,
    mentions,
    reaction_disposition,
)
from core.signals import Signal
from core.store import StoredDelivery

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def delivery(policy: Policy, disposition: Disposition | None = None) -> StoredDelivery:
    decision = Decision(
        "E1", "lead", Directedness.TO_ME, policy, InjectionMode.IMMEDIATE, "direct_message"
    )
    return StoredDelivery(decision, 1, "delivered", 1, disposition)


@pytest.mark.parametrize(
    ("policy", "signal", "recorded"),
    [
        (Policy.MUST_RESPOND, Signal.DONE, None),
        (Policy.MUST_RESPOND, Signal.SEEN, None),
        (Policy.MAY_RESPOND, Signal.DONE, None),
        (Policy.MAY_RESPOND, Signal.WORKING, None),
        (Policy.MAY_RESPOND, Signal.QUEUED, Disposition.DEFERRED),
        (Policy.ACK_ONLY, Signal.SEEN, Disposition.ACKNOWLEDGED),
        (Policy.MAY_RESPOND, Signal.UNCLEAR, None),
    ],
)
def test_only_a_visible_answer_closes_a_question(
    policy: Policy, signal: Signal, recorded: Disposition | None
) -> None:
    assert reaction_disposition(policy, signal) is recorded


@pytest.mark.parametrize(
    ("policy", "disposition", "holder", "owed"),
    [
        (Policy.MUST_RESPOND, None, None, True),
        (Policy.MUST_RESPOND, Disposition.CLAIMED, "lead", True),
        (Policy.MUST_RESPOND, Disposition.FAILED, None, True),
        (Policy.MUST_RESPOND, Disposition.RESPONDED, None, False),
        (Policy.MUST_RESPOND, Disposition.SUPERSEDED, None, False),
        (Policy.MUST_RESPOND, None, "worker-1", False),
        (Policy.MAY_RESPOND, None, None, False),
        (Policy.MAY_RESPOND, None, "lead", True),
        (Policy.ACK_ONLY, None, None, False),
    ],
)
def test_what_a_turn_still_owes(
    policy: Policy, disposition: Disposition | None, holder: str | None, owed: bool
) -> None:
    assert is_owed(delivery(policy, disposition), holder, "lead") is owed


def test_the_holder_of_a_claim_may_answer_and_nobody_else() -> None:
    check_answerable(delivery(Policy.MAY_RESPOND), "lead", "lead")
    with pytest.raises(ToolError, match="agent:worker-1 claimed E1; stay out"):
        check_answerable(delivery(Policy.MAY_RESPOND), "worker-1", "lead")


def test_words_an_edit_or_a_delete_replaced_get_no_reply() -> None:
    check_reply(delivery(Policy.MUST_RESPOND), None, "lead", "4")
    with pytest.raises(ToolError, match="E1 was edited or deleted"):
        check_reply(delivery(Policy.MUST_RESPOND, Disposition.SUPERSEDED), None, "lead", "4")


def test_an_obliging_post_names_known_recipients_and_ambient_names_none() -> None:
    manifest = local_workspace().manifest
    assert mentions(Directedness.AMBIENT, (), manifest) == ()
    to_role = (f"role:{next(iter(manifest.roles))}", "user:U111")
    assert mentions(Directedness.TO_MY_ROLE, to_role, manifest) == to_role
    with pytest.raises(ToolError, match="unknown recipient 'team:x'"):
        mentions(Directedness.TO_MY_ROLE, ("team:x",), manifest)


def test_a_derived_key_is_the_same_for_the_same_message_only() -> None:
    key = derived_key("lead", "Green.", "E1")
    assert key == derived_key("lead", "Green.", "E1") and key.startswith("E1:lead:send:")
    assert key != derived_key("lead", "Red.", "E1")


def test_the_send_budget_counts_a_sliding_minute() -> None:
    budget = SendBudget(2)
    budget.spend("C1", NOW)
    budget.spend("C1", NOW + timedelta(seconds=30))
    budget.spend("C2", NOW + timedelta(seconds=30))
    with pytest.raises(ToolError, match="you sent 2 messages in C1 in the last minute"):
        budget.spend("C1", NOW + timedelta(seconds=59))
    budget.spend("C1", NOW + timedelta(seconds=60))
