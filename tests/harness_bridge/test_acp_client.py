"""The host's side of the Agent Client Protocol (`harness_bridge.backends.acp_client`): the
answers to permission requests and the progress read from session updates, pure."""

from __future__ import annotations

from acp.schema import (
    AgentPlanUpdate,
    AllowedOutcome,
    PermissionOption,
    PlanEntry,
    ToolCallStart,
    ToolCallUpdate,
)

from harness_bridge.backends.acp_client import PermissionPolicy, progress_note

OPTIONS = [
    PermissionOption(option_id="yes", name="Allow", kind="allow_once"),
    PermissionOption(option_id="always", name="Always", kind="allow_always"),
    PermissionOption(option_id="no", name="Reject", kind="reject_once"),
]


def asked(title: str) -> ToolCallUpdate:
    return ToolCallUpdate(tool_call_id="t1", title=title)


def chosen(policy: PermissionPolicy, title: str) -> str | None:
    outcome = policy.answer(asked(title), OPTIONS).outcome
    return outcome.option_id if isinstance(outcome, AllowedOutcome) else None


def test_an_allowed_tool_is_allowed_once_and_anything_else_rejected() -> None:
    policy = PermissionPolicy(["chat_react"])
    assert chosen(policy, "chat_react") == "yes"
    assert chosen(policy, "Bash") == "no"


def test_without_an_option_of_the_wanted_kind_nothing_is_chosen() -> None:
    only_always = [PermissionOption(option_id="always", name="Always", kind="allow_always")]
    answer = PermissionPolicy(["chat_react"]).answer(asked("chat_react"), only_always)
    assert answer.outcome.outcome == "cancelled"


def test_progress_says_what_the_agent_is_doing_in_a_few_words() -> None:
    reading = ToolCallStart(
        tool_call_id="t1", title="Read", kind="read", session_update="tool_call"
    )
    assert progress_note(reading) == "reading"
    plan = AgentPlanUpdate(
        session_update="plan",
        entries=[
            PlanEntry(content="one", priority="high", status="completed"),
            PlanEntry(content="two", priority="high", status="in_progress"),
            PlanEntry(content="three", priority="low", status="pending"),
        ],
    )
    assert progress_note(plan) == "step 2 of 3"
    assert progress_note(object()) is None
