"""An ACP agent's permission request asked of people in chat, end to end: the fake ACP agent
(a real subprocess) asks leave to run `shell_exec`, which its allow list does not grant; the
question reaches the conversation of the turn as a message with buttons, through the outbox
and the real sender, and a press comes back through the platform's own library.

On Slack (the fake Slack, the real slack-bolt over Socket Mode): an approver's press lets the
tool run and the message is redrawn with chat.update to say who decided; a non-approver's
press gets an ephemeral refusal and decides nothing; silence until the deadline (the host's
virtual clock) is a refusal. On the web chat (the real page server): a press is a POST, a
non-approver's refused with the reason, an approver's lets the tool run."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from builders import LEAD, TEAM, local_workspace
from fakes.slack import FakeSlack
from outbox_pump import pumped
from test_acp_backend import THANKS, Bed, loop_for, scenario, thanks, turn_of

from adapters.slack.asks import listen_for_presses
from adapters.slack.live import SlackAgentConnection
from adapters.slack.send import SlackSender
from core.asking import TEXT_CHARS
from core.outbox import Outbox

BOT, APP = "xoxb-lead-test", "xapp-1-lead-test"
ENV = {
    "SLACK_LEAD_BOT_TOKEN": BOT,
    "SLACK_W1_BOT_TOKEN": "xoxb-w1",
    "SLACK_W2_BOT_TOKEN": "xoxb-w2",
}
ANA, BEN = "U0ANA", "U0BEN"
YES, NO = {"outcome": "selected", "optionId": "yes"}, {"outcome": "selected", "optionId": "no"}


async def _nothing(*_: Any) -> None:
    return None


@contextlib.asynccontextmanager
async def slack_for(bed: Bed) -> AsyncIterator[FakeSlack]:
    """The fake Slack, the lead's live app on it answering presses, and the outbox sending to
    it every few milliseconds."""
    async with FakeSlack() as slack:
        slack.add_bot(BOT, LEAD, "B0LEAD", TEAM)
        workspace = local_workspace(slack={"team_id": TEAM, "api_url": slack.api_url})
        sender = SlackSender(workspace, ENV, lookup=bed.engine.event, clock=bed.engine.clock)
        outbox = Outbox(bed.store, bed.engine.clock, {"slack": sender})
        connection = SlackAgentConnection(
            "lead", _nothing, bot_token=BOT, app_token=APP, api_url=slack.api_url
        )
        listen_for_presses(connection.app, bed.engine.approvals)
        await connection.start()

        try:
            async with pumped(outbox):
                yield slack
        finally:
            await connection.close()
            await sender.close()


async def asked(slack: FakeSlack, channel: str) -> dict[str, Any]:
    """The message with buttons once posted in `channel`."""
    while True:
        for message in slack.messages.get(channel, []):
            if any(b.get("type") == "actions" for b in message.get("blocks") or []):
                return message
        await asyncio.sleep(0.02)


def buttons(message: dict[str, Any]) -> dict[str, str]:
    """A posted message's buttons: label → action id."""
    (actions,) = [b for b in message["blocks"] if b["type"] == "actions"]
    return {button["text"]["text"]: button["action_id"] for button in actions["elements"]}


def allow_once(message: dict[str, Any]) -> str:
    """The action id of a posted question's "Allow once" button."""
    return buttons(message)["Allow once"]


def permissions(bed: Bed) -> list[dict[str, Any]]:
    return [r["outcome"] for r in bed.records("permission")]


def decided(bed: Bed, outcome: str, approver: str | None) -> None:
    """The harness was allowed and the redrawn question says by whom, when `approver` pressed;
    else it was refused and the question says nobody answered."""
    if approver is not None:
        assert permissions(bed) == [YES]
        assert outcome.startswith(f"Allow once, by {approver} at ")
    else:
        assert permissions(bed) == [NO]
        assert outcome.startswith("No answer by ")


def slack_scenario(
    tmp_path: Path, presses: list[str], *, wait: bool = False, by_group: bool = False
) -> None:
    """Run a turn whose agent asks for `shell_exec`; `presses` press "Allow once" in turn
    (ANA is the lead's approver, by user id or, with `by_group`, as a member of the approving
    user group S0OPS); with `wait`, the clock passes the deadline instead."""

    async def test(bed: Bed) -> None:
        bed.engine.approvals.approvers["lead"] = ("group:S0OPS",) if by_group else (ANA,)
        async with slack_for(bed) as slack, loop_for(bed, FAKE_ACP_ASK="shell_exec") as loop:
            slack.usergroups["S0OPS"] = [ANA, "U0CARL"]
            turn = asyncio.create_task(loop.run(await turn_of(bed.engine, THANKS)))
            message = await asked(slack, "D0LEAD")
            assert message["text"] == "lead asks to use shell_exec."
            for user in presses:
                await slack.press("D0LEAD", message["ts"], allow_once(message), user=user)
            if wait:
                bed.engine.clock.advance(timedelta(seconds=301))  # type: ignore[attr-defined]
            assert (await turn).status == "completed"
            while "blocks" in message and any(b["type"] == "actions" for b in message["blocks"]):
                await asyncio.sleep(0.02)  # until chat.update has redrawn it
            outcome = message["blocks"][-1]["elements"][0]["text"]
            decided(bed, outcome, ANA if presses and presses[-1] == ANA else None)
            refused = [c.params for c in slack.calls_to("chat.postEphemeral")]
            assert [p["user"] for p in refused] == [u for u in presses if u != ANA]
            assert all(p["text"] == "Only lead's approvers can answer this." for p in refused)

    scenario(tmp_path, test, thanks())


def test_on_slack_an_approver_s_press_lets_the_tool_run(tmp_path: Path) -> None:
    slack_scenario(tmp_path, [ANA])


def test_on_slack_a_non_approver_s_press_is_refused_ephemerally(tmp_path: Path) -> None:
    slack_scenario(tmp_path, [BEN, ANA])


def test_on_slack_silence_times_out_to_refusal(tmp_path: Path) -> None:
    slack_scenario(tmp_path, [BEN], wait=True)


def test_on_slack_a_member_of_an_approving_user_group_may_decide(tmp_path: Path) -> None:
    slack_scenario(tmp_path, [BEN, ANA], by_group=True)


def test_on_slack_a_tool_s_title_is_shown_bounded_and_pings_nobody(tmp_path: Path) -> None:
    """A title is the agent's words, often the command it would run, which a chat message may
    have shaped: `<!channel>` in it stays text in the message's own (mrkdwn) text, and a
    script-long title is cut to fit Block Kit's section (3,000 characters at most)."""
    title = "<!channel> <@U0BEN> " + "echo hello > /tmp/x; " * 300

    async def test(bed: Bed) -> None:
        bed.engine.approvals.approvers["lead"] = (ANA,)
        async with slack_for(bed) as slack, loop_for(bed, FAKE_ACP_ASK=title) as loop:
            turn = asyncio.create_task(loop.run(await turn_of(bed.engine, THANKS)))
            message = await asked(slack, "D0LEAD")
            assert message["text"].startswith("lead asks to use &lt;!channel&gt; &lt;@U0BEN&gt;")
            assert "<" not in message["text"]
            section = message["blocks"][0]["text"]["text"]
            assert len(section) == TEXT_CHARS and section.endswith("…")
            await slack.press("D0LEAD", message["ts"], allow_once(message), user=ANA)
            assert (await turn).status == "completed"
            assert permissions(bed) == [YES]

    scenario(tmp_path, test, thanks())


def test_a_question_open_when_the_turn_is_interrupted_is_answered_cancelled(
    tmp_path: Path,
) -> None:
    async def test(bed: Bed) -> None:
        bed.engine.approvals.approvers["lead"] = (ANA,)
        async with slack_for(bed) as slack, loop_for(bed, FAKE_ACP_ASK="shell_exec") as loop:
            turn = asyncio.create_task(loop.run(await turn_of(bed.engine, THANKS)))
            message = await asked(slack, "D0LEAD")
            loop.drop(THANKS)  # the message was deleted mid-turn
            assert (await turn).status == "completed"
            assert permissions(bed) == [{"outcome": "cancelled"}]
            ack = await slack.press("D0LEAD", message["ts"], allow_once(message), user=ANA)
            assert ack is not None
            while not slack.calls_to("chat.postEphemeral"):
                await asyncio.sleep(0.02)
            (closed,) = slack.calls_to("chat.postEphemeral")
            assert closed.params["text"] == "This question is no longer open."

    scenario(tmp_path, test, thanks())
