"""What the page is told of each agent's model (`model_status.views`): the harness's own word,
`down` in place of `ready` while the agent is known to be down, and `none` for an agent with
no harness."""

from __future__ import annotations

from datetime import UTC, datetime

from harness_bridge.backends.model_status import DOWN_DETAIL, ModelStatus, views

SINCE = datetime(2026, 11, 27, 3, 25, tzinfo=UTC)


class Described:
    """A harness that says which model answers it."""

    def __init__(self, status: ModelStatus) -> None:
        self.status = status

    def model_status(self) -> ModelStatus:
        return self.status


def test_a_ready_model_whose_agent_is_down_shows_down_and_since_when() -> None:
    harnesses = {"lead": Described(ModelStatus("qwen", "the server at http://127.0.0.1:9/v1"))}
    up = views(harnesses, (), {})
    down = views(harnesses, (), {"lead": SINCE})
    assert up["lead"]["state"] == "ready" and up["lead"]["detail"] == ""
    assert down["lead"] | {"state": "ready", "since": None, "detail": ""} == up["lead"]
    assert (down["lead"]["state"], down["lead"]["since"]) == ("down", SINCE.timestamp())
    assert down["lead"]["detail"] == DOWN_DETAIL


def test_a_model_being_built_or_failed_says_so_down_or_not_and_no_harness_says_none() -> None:
    building = ModelStatus("SmolLM2", "in process", state="building", since=1.0)
    failed = ModelStatus("SmolLM2", "in process", state="failed", detail="the build failed")
    harnesses = {"lead": Described(building), "worker-1": Described(failed), "other": object()}
    shown = views(harnesses, ["worker-2"], {"lead": SINCE, "worker-1": SINCE, "worker-2": SINCE})
    assert shown["lead"] == building.view()
    assert shown["worker-1"] == failed.view()
    assert shown["worker-2"]["state"] == "none"
    assert "other" not in shown  # a harness that does not say which model answers it
