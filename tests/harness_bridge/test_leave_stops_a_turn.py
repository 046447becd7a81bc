"""`/c2a leave` stops a running turn: the command's cancellation reaches the `acp` harness
while the fake ACP agent is mid-prompt, the agent is sent `session/cancel`, nothing is
prompted again and nothing is posted."""

from __future__ import annotations

from pathlib import Path

from test_acp_backend import DM, Bed, dm, running, scenario, until
from test_acp_backend import DM_TEXT as HANGING

from core.command_answers import Commands
from core.decision import Disposition
from core.emission import Cancel, Emission

APPROVER = "U0ALICE"


def test_leave_stops_the_turn_the_agent_is_running(tmp_path: Path) -> None:
    async def test(bed: Bed) -> None:
        bed.engine.approvals.approvers["lead"] = (APPROVER,)
        async with running(bed, env={"FAKE_ACP_HANG": HANGING}) as harness:
            await until(lambda: bool(bed.records("prompt")))

            async def sink(emissions: list[Emission]) -> None:
                assert harness.deliverer is not None
                for emission in emissions:
                    assert isinstance(emission, Cancel)
                    await harness.deliverer.tell(emission)

            reply = await Commands(bed.engine, sink).answer("slack", APPROVER, (), "leave lead")
            assert reply == "Stopped lead's turn on 1 message."
            await harness.idle()
        assert [c["session_id"] for c in bed.records("cancel")] == ["s1"]
        assert len(bed.records("prompt")) == 1
        assert bed.sends() == []
        (stored,) = [d for d in await bed.store.deliveries(DM) if d.decision.agent == "lead"]
        assert stored.disposition is Disposition.IGNORED

    scenario(tmp_path, test, dm())
