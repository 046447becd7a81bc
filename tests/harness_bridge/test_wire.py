import copy
from typing import Any

import pytest
from pydantic import ValidationError

from core.decision import Directedness, InjectionMode, Policy, Priority
from harness_bridge.wire import (
    COMPACT_VIEW,
    FULL_ENVELOPE,
    METHOD_CANCELLED,
    METHOD_DELIVER,
    METHOD_INITIALIZE,
    PROTOCOL_VERSIONS,
    CancelledParams,
    CancelReason,
    Capabilities,
    ClientInfo,
    CompactDeliverParams,
    DeliverParams,
    DeliverRequest,
    InitializeParams,
    InitializeResult,
    InjectionCapabilities,
    JsonRpcNotification,
    JsonRpcRequest,
    Knock,
    MembershipPart,
    ProgressParams,
    ReactionPart,
    TextPart,
    ThreadPart,
    TypingParams,
    UtilityCapabilities,
    common_capabilities,
    compact_policy,
    negotiate_version,
    parse_deliver,
    to_compact,
)

# Spec 000's examples, verbatim.
INITIALIZE_REQUEST: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": "1",
    "method": "initialize",
    "params": {
        "protocolVersion": "2026-06-02",
        "clientInfo": {"name": "pear-chat-adapter", "version": "0.1.0"},
        "capabilities": {
            "delivery": {"ack": True, "redelivery": True, "idempotency": True},
            "injection": {
                "immediate": True,
                "buffered": True,
                "notify": True,
                "tool_mailbox": True,
                "digest": True,
                "interrupt": False,
            },
            "chatTools": {
                "readThread": True,
                "sendMessage": True,
                "react": True,
                "reactionSignals": True,
                "claim": True,
                "defer": True,
                "resolve": True,
            },
            "utilities": {"progress": True, "cancellation": True, "logging": True},
        },
    },
}

DELIVER_REQUEST: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": "deliver-456",
    "method": "chat/deliver",
    "params": {
        "eventId": "evt_123",
        "source": {"platform": "slack", "workspaceId": "T123"},
        "conversation": {
            "id": "C123",
            "kind": "dm",
            "streamId": "stream_backend-migration",
            "threadId": "1748890000.000100",
        },
        "author": {"id": "U123", "kind": "human", "displayName": "Will"},
        "target": {
            "mentions": ["agent:lead"],
            "recipient": "agent:lead",
            "directedness": "to_me",
        },
        "content": [{"type": "text", "text": "Can you check whether the deploy is blocked?"}],
        "timing": {"createdAt": "2026-06-02T19:10:00Z", "sequence": 42},
        "attention": {
            "policy": "must_respond",
            "reason": "direct_message",
            "priority": "normal",
            "deadlineMs": 300000,
        },
        "injection": {"mode": "buffered", "context": "thread_window", "role": "user"},
        "reliability": {"attempt": 1, "idempotencyKey": "evt_123:agent_lead"},
    },
}

KNOCK: dict[str, Any] = {
    "from": "agent:worker-3",
    "where": "thread:deploy-migration",
    "directedness": "to_my_role",
    "policy": "may_respond",
    "priority": "normal",
    "topic": "question about the rollback step",
    "pullWith": "chat.read_thread",
}


def deliver_params(**changes: Any) -> dict[str, Any]:
    params: dict[str, Any] = copy.deepcopy(DELIVER_REQUEST["params"])
    params.update(changes)
    return params


def test_spec_initialize_request_parses_and_dumps_identically() -> None:
    request = JsonRpcRequest.model_validate(INITIALIZE_REQUEST)
    assert request.method == METHOD_INITIALIZE
    assert request.params is not None
    params = InitializeParams.model_validate(request.params)

    assert params.client_info == ClientInfo(name="pear-chat-adapter", version="0.1.0")
    assert params.capabilities.injection.tool_mailbox is True
    assert params.capabilities.injection.interrupt is False
    assert params.capabilities.chat_tools.reaction_signals is True
    assert params.to_wire() == INITIALIZE_REQUEST["params"]
    assert request.to_wire() == INITIALIZE_REQUEST


def test_spec_deliver_request_parses_and_dumps_identically() -> None:
    request = DeliverRequest.model_validate(DELIVER_REQUEST)
    params = request.params

    assert isinstance(params, DeliverParams)
    assert request.method == METHOD_DELIVER
    assert params.event_id == "evt_123"
    assert params.conversation.stream_id == "stream_backend-migration"
    assert params.target.directedness is Directedness.TO_ME
    assert params.target.mentions == ["agent:lead"]
    assert params.content == [TextPart(text="Can you check whether the deploy is blocked?")]
    assert params.timing.created_at == "2026-06-02T19:10:00Z"
    assert params.attention.policy is Policy.MUST_RESPOND
    assert params.attention.priority is Priority.NORMAL
    assert params.attention.deadline_ms == 300000
    assert params.injection.mode is InjectionMode.BUFFERED
    assert params.reliability.idempotency_key == "evt_123:agent_lead"
    assert request.to_wire() == DELIVER_REQUEST


def test_every_content_part_kind_round_trips_through_the_discriminator() -> None:
    parts = [
        {"type": "text", "text": "hi"},
        {
            "type": "reaction",
            "action": "added",
            "emoji": "eyes",
            "signal": "seen",
            "messageId": "1748890000.000100",
        },
        {"type": "membership", "action": "left", "userId": "U222"},
        {"type": "thread", "threadId": "1748890000.000100", "name": "deploy"},
    ]
    params = DeliverParams.model_validate(deliver_params(content=parts))

    assert [type(part) for part in params.content] == [
        TextPart,
        ReactionPart,
        MembershipPart,
        ThreadPart,
    ]
    assert params.to_wire()["content"] == parts


def test_notify_knock_with_from_round_trips() -> None:
    wire = deliver_params(injection={"mode": "notify"}, content=[], knock=KNOCK)
    params = DeliverParams.model_validate(wire)

    assert params.knock is not None
    assert params.knock.from_ == "agent:worker-3"
    assert params.knock.pull_with == "chat.read_thread"
    assert params.to_wire() == wire
    assert Knock.model_validate(KNOCK).to_wire() == KNOCK


def test_knock_can_be_built_with_python_names() -> None:
    knock = Knock(
        from_="agent:worker-3",
        where="thread:deploy-migration",
        directedness=Directedness.TO_MY_ROLE,
        policy=Policy.MAY_RESPOND,
        priority=Priority.NORMAL,
        topic="question about the rollback step",
        pull_with="chat.read_thread",
    )

    assert knock.to_wire() == KNOCK


def test_negotiation_picks_the_compact_view_when_both_sides_support_it() -> None:
    assert (
        negotiate_version(PROTOCOL_VERSIONS, FULL_ENVELOPE, [FULL_ENVELOPE, COMPACT_VIEW])
        == COMPACT_VIEW
    )
    assert negotiate_version(PROTOCOL_VERSIONS, COMPACT_VIEW) == COMPACT_VIEW


def test_negotiation_falls_back_to_the_full_envelope_when_that_is_all_the_harness_offers() -> None:
    assert negotiate_version(PROTOCOL_VERSIONS, FULL_ENVELOPE) == FULL_ENVELOPE


def test_negotiation_returns_none_when_nothing_is_common() -> None:
    assert negotiate_version(PROTOCOL_VERSIONS, "2025-01-01", ["2025-03-01"]) is None
    assert negotiate_version([FULL_ENVELOPE], COMPACT_VIEW) is None


def test_negotiation_tolerates_an_unknown_future_version() -> None:
    future = "2027-01-01"

    assert negotiate_version(PROTOCOL_VERSIONS, future, [future, FULL_ENVELOPE]) == FULL_ENVELOPE
    assert negotiate_version(PROTOCOL_VERSIONS, "not-a-date", [COMPACT_VIEW]) == COMPACT_VIEW


def test_common_capabilities_ands_every_flag() -> None:
    host = InitializeParams.model_validate(INITIALIZE_REQUEST["params"]).capabilities
    harness = Capabilities(
        injection=InjectionCapabilities(buffered=True, notify=True, interrupt=True),
        utilities=UtilityCapabilities(progress=True),
    )

    common = common_capabilities(host, harness)

    assert common.to_wire() == {
        "delivery": {"ack": False, "redelivery": False, "idempotency": False},
        "injection": {
            "immediate": False,
            "buffered": True,
            "notify": True,
            "tool_mailbox": False,
            "digest": False,
            "interrupt": False,
        },
        "chatTools": {
            "readThread": False,
            "sendMessage": False,
            "react": False,
            "reactionSignals": False,
            "claim": False,
            "defer": False,
            "resolve": False,
        },
        "utilities": {"progress": True, "cancellation": False, "logging": False},
    }
    assert common_capabilities(host, host) == host


def test_missing_capabilities_default_to_all_false() -> None:
    params = InitializeParams.model_validate(
        {"protocolVersion": COMPACT_VIEW, "clientInfo": {"name": "h", "version": "1"}}
    )

    assert params.capabilities == Capabilities()
    assert params.capabilities.delivery.ack is False


def test_initialize_result_carries_server_info() -> None:
    result = InitializeResult(
        protocol_version=COMPACT_VIEW,
        server_info=ClientInfo(name="c2a", version="0.1.0"),
    )

    assert result.to_wire()["serverInfo"] == {"name": "c2a", "version": "0.1.0"}
    assert InitializeResult.model_validate(result.to_wire()) == result


def test_compact_view_round_trips_and_keeps_the_typed_parts() -> None:
    full = DeliverParams.model_validate(deliver_params())

    compact = to_compact(full)
    wire = compact.to_wire()

    assert wire["content"] == "Can you check whether the deploy is blocked?"
    assert wire["contentParts"] == DELIVER_REQUEST["params"]["content"]
    assert wire["addressedToMe"] is True
    assert wire["policy"] == "must_respond"
    assert wire["attention"] == DELIVER_REQUEST["params"]["attention"]
    assert CompactDeliverParams.model_validate(wire) == compact
    assert parse_deliver(wire) == compact
    request = {"jsonrpc": "2.0", "id": "d-1", "method": "chat/deliver", "params": wire}
    assert DeliverRequest.model_validate(request).params == compact


def test_parse_deliver_chooses_the_full_envelope_for_a_list_of_parts() -> None:
    assert isinstance(parse_deliver(deliver_params()), DeliverParams)
    assert parse_deliver(DELIVER_REQUEST) == parse_deliver(DELIVER_REQUEST["params"])


def test_parse_deliver_rejects_a_request_without_params() -> None:
    with pytest.raises(ValidationError):
        parse_deliver({"jsonrpc": "2.0", "id": "d-1", "method": "chat/deliver"})


def test_compact_policy_maps_ack_only_to_must_not_respond() -> None:
    assert compact_policy(Policy.ACK_ONLY) == "must_not_respond"
    assert compact_policy(Policy.MUST_NOT_RESPOND) == "must_not_respond"
    assert compact_policy(Policy.MUST_RESPOND) == "must_respond"
    assert compact_policy(Policy.MAY_RESPOND) == "may_respond"


def test_ack_only_event_is_compact_must_not_respond_but_keeps_attention_policy() -> None:
    wire = deliver_params()
    wire["attention"] = {**wire["attention"], "policy": "ack_only"}

    compact = to_compact(DeliverParams.model_validate(wire))

    assert compact.policy == "must_not_respond"
    assert compact.attention.policy is Policy.ACK_ONLY


def test_unknown_extra_fields_are_ignored() -> None:
    wire = deliver_params(futureField={"x": 1})
    wire["author"] = {**wire["author"], "avatar": "https://example.invalid/a.png"}
    wire["content"] = [{"type": "text", "text": "hi", "format": "mrkdwn"}]

    params = DeliverParams.model_validate(wire)
    dumped = params.to_wire()

    assert "futureField" not in dumped
    assert "avatar" not in dumped["author"]
    assert dumped["content"] == [{"type": "text", "text": "hi"}]


def test_a_deliver_with_attempt_zero_fails_validation() -> None:
    wire = deliver_params(reliability={"attempt": 0, "idempotencyKey": "evt_123:agent_lead"})

    with pytest.raises(ValidationError, match="attempt"):
        DeliverParams.model_validate(wire)


def test_a_deliver_with_a_bad_directedness_fails_validation() -> None:
    wire = deliver_params(target={"mentions": [], "directedness": "to_everyone"})

    with pytest.raises(ValidationError, match="directedness"):
        DeliverParams.model_validate(wire)


def test_a_deliver_with_a_naive_timestamp_fails_validation() -> None:
    wire = deliver_params(timing={"createdAt": "2026-06-02T19:10:00", "sequence": 42})

    with pytest.raises(ValidationError, match="createdAt"):
        DeliverParams.model_validate(wire)


def test_an_unknown_content_part_type_fails_validation() -> None:
    with pytest.raises(ValidationError):
        DeliverParams.model_validate(deliver_params(content=[{"type": "poll", "q": "?"}]))


def test_wire_models_are_frozen() -> None:
    params = DeliverParams.model_validate(deliver_params())

    with pytest.raises(ValidationError):
        params.event_id = "evt_999"


def test_cancelled_notification_round_trips() -> None:
    wire = {
        "jsonrpc": "2.0",
        "method": "notifications/cancelled",
        "params": {"requestId": "deliver-456", "eventId": "evt_123", "reason": "deleted"},
    }
    note = JsonRpcNotification.model_validate(wire)
    assert note.method == METHOD_CANCELLED
    assert note.params is not None

    params = CancelledParams.model_validate(note.params)

    assert params.reason is CancelReason.DELETED
    assert params.to_wire() == wire["params"]
    assert note.to_wire() == wire


def test_spec_progress_notification_round_trips() -> None:
    wire = {
        "progressToken": "deploy-check-1",
        "progress": 2,
        "total": 5,
        "message": "Checked build status",
    }

    assert ProgressParams.model_validate(wire).to_wire() == wire


def test_typing_notification_round_trips() -> None:
    wire = {
        "conversation": {"id": "C123", "kind": "channel"},
        "authorId": "U123",
        "until": "2026-06-02T19:10:05+00:00",
    }

    assert TypingParams.model_validate(wire).to_wire() == wire
