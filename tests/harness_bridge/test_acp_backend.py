"""The `acp` backend against a fake ACP agent run as a real subprocess, whose replies go through
the real MCP server subprocess it is given, over a ledger file shared with the host."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from builders import (
    LEAD,
    LOCAL,
    W1,
    W2,
    local_workspace,
    slack_body,
    slack_delete,
    slack_edit,
    slack_join,
    slack_message,
)
from world import BASE, harness_context

from adapters.slack import normalise
from core.clock import VirtualClock, parse_time
from core.emission import Cancel, Typing
from core.engine import Engine
from core.engine_port import EnginePort
from core.errors import ManifestError
from core.indicator import STATUS_TEXT
from core.sqlite_store import SQLiteStore
from harness_bridge.backends.acp import AcpHarness, AcpModelLoop, from_settings
from harness_bridge.backends.acp_sessions import sessions_file
from harness_bridge.backends.acp_settings import ledger_of
from harness_bridge.backends.acp_tools import mcp_server_entry
from harness_bridge.backends.registry import HarnessContext
from harness_bridge.envelope import deliver_request
from harness_bridge.prompt import RESPONSE_RULES
from harness_bridge.turns import Turn

FAKE = str(Path(__file__).with_name("fake_acp_agent.py"))
TIMEOUT_S = 120  # subprocesses start slowly on a busy machine

DM_TS = f"{BASE + 1}.000100"
DM_TEXT = "can you check the deploy?"
DM = f"slack:T0LOCAL:D0LEAD:{DM_TS}"
THANKS = f"slack:T0LOCAL:D0LEAD:{BASE + 4}.000100"
MENTION = f"slack:T0LOCAL:C0GEN:{BASE + 2}.000100"


def dm() -> dict[str, Any]:
    message = slack_message(DM_TS, DM_TEXT, channel="D0LEAD", channel_type="im")
    return slack_body(message, via="lead")


def thanks() -> dict[str, Any]:
    message = slack_message(f"{BASE + 4}.000100", "thanks!", channel="D0LEAD", channel_type="im")
    return slack_body(message, via="lead")


def mention() -> dict[str, Any]:
    return slack_body(slack_message(f"{BASE + 2}.000100", f"<@{LEAD}> is the build green?"))


@dataclass
class Bed:
    """A ledger file with the agents in #general, the host's engine on it, and where the fake
    agent records what it receives."""

    engine: Engine
    store: SQLiteStore
    ledger: Path
    log: Path

    async def ingest(self, body: dict[str, Any]) -> list[Any]:
        event = normalise(body)
        assert event is not None
        async with self.store.transaction():
            outcome = await self.engine.ingest(event)
        return outcome.emissions

    def settings(self, **settings: Any) -> dict[str, Any]:
        env = {"FAKE_ACP_RECORD": str(self.log), **settings.pop("env", {})}
        return {
            "backend": "acp",
            "command": [sys.executable, FAKE],
            "env": env,
            "manifest": str(LOCAL),
            "store": str(self.ledger),
            "quiet_ms": 0,
            **settings,
        }

    def records(self, kind: str | None = None) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        lines = self.log.read_text(encoding="utf-8").splitlines()
        seen = [json.loads(line) for line in lines]
        return [r for r in seen if kind is None or r["kind"] == kind]

    def outbox(self, action: str) -> list[dict[str, Any]]:
        rows = self.store.db.execute("SELECT action FROM outbox ORDER BY n")
        actions = [json.loads(a) for (a,) in rows]
        return [a for a in actions if a["action"] == action]

    def sends(self) -> list[str]:
        return [a["inReplyTo"] for a in self.outbox("send")]


def scenario(tmp_path: Path, test: Callable[[Bed], Awaitable[None]], *bodies: Any) -> None:
    async def run() -> None:
        ledger = tmp_path / "team.sqlite3"
        store = SQLiteStore(str(ledger))
        await store.open()
        clock = VirtualClock(parse_time("2026-01-01T00:00:10Z"))
        bed = Bed(Engine(local_workspace(), store, clock), store, ledger, tmp_path / "agent.jsonl")
        for body in [*(slack_body(slack_join(u)) for u in (LEAD, W1, W2)), *bodies]:
            await bed.ingest(body)
        try:
            async with asyncio.timeout(TIMEOUT_S):
                await test(bed)
        finally:
            await store.close()

    asyncio.run(run())


def running(bed: Bed, **settings: Any) -> contextlib.AbstractAsyncContextManager[AcpHarness]:
    """The lead's acp harness, started and given every pending delivery."""
    return serving(from_settings(harness_context(bed.engine, "lead"), bed.settings(**settings)))


@contextlib.asynccontextmanager
async def serving(harness: AcpHarness) -> AsyncIterator[AcpHarness]:
    """`harness` started and given every pending delivery, stopped on the way out."""
    deliverer = await harness.start()
    try:
        await deliverer.resume()
        yield harness
    finally:
        await harness.stop()


async def tell(bed: Bed, harness: AcpHarness, body: dict[str, Any]) -> None:
    """Ingest an event and pass on what the host would: notifications at once, then the
    pending deliveries."""
    emissions = await bed.ingest(body)
    assert harness.deliverer is not None
    for emission in emissions:
        if isinstance(emission, Cancel | Typing):
            await harness.deliverer.tell(emission)
    await harness.deliverer.resume()


async def until(condition: Callable[[], bool]) -> None:
    """Wait for something the fake agent records (bounded by the scenario's timeout)."""
    while not condition():
        await asyncio.sleep(0.05)


async def turn_of(engine: Engine, event_id: str) -> Turn:
    (delivery,) = [d for d in await engine.store.deliveries(event_id) if d.decision.agent == "lead"]
    message = deliver_request(await engine.deliveries.delivery(delivery), compact=False, attempt=1)
    return Turn(engine.clock.now(), "immediate", (dict(message["params"]),))


def loop_for(bed: Bed, **env: str) -> AcpModelLoop:
    settings = bed.settings(env=env)
    return AcpModelLoop(
        EnginePort(bed.engine, "lead"),
        settings["command"],
        mcp_server_entry("lead", settings["manifest"], settings["store"]),
        allow=["chat_send_message"],
        env=settings["env"],
        sessions_path=sessions_file(str(bed.ledger.with_suffix("")), "lead"),
    )


# ---- a turn ----------------------------------------------------------------------------------


def test_a_must_respond_event_is_answered_once_through_the_mcp_server(tmp_path: Path) -> None:
    async def test(bed: Bed) -> None:
        async with running(bed) as harness:
            await harness.idle()
            assert [r.status for r in harness.results] == ["completed"]
            # The same turn again (a redelivery) finds the event answered: nothing is prompted.
            again = await harness.loop.run(await turn_of(bed.engine, DM))
            assert again.status == "completed" and again.event_ids == ()
        (session,) = bed.records("new_session")
        (server,) = session["mcp_servers"]
        assert server["name"] == "c2a" and server["command"] == sys.executable
        assert server["args"][:3] == ["-m", "c2a.mcp_cli", "--manifest"]
        assert server["args"][-2:] == ["--agent", "lead"]
        assert server["args"][server["args"].index("--store") + 1] == str(bed.ledger)
        (prompt,) = bed.records("prompt")
        assert prompt["text"].startswith(RESPONSE_RULES)
        assert DM in prompt["text"] and "response_policy: must_respond" in prompt["text"]
        (sent,) = bed.records("send")
        assert sent["event_id"] == DM and not sent["error"]
        assert bed.sends() == [DM]
        saved = json.loads((tmp_path / "team.acp-lead.json").read_text(encoding="utf-8"))
        assert saved == {"slack:D0LEAD": "s1"}

    scenario(tmp_path, test, dm())


def test_an_agent_that_takes_http_is_given_the_host_s_own_endpoint(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """No tools process: the agent calls the host's loopback endpoint with the token it alone
    is given (never logged), and the endpoint stops with the harness."""
    caplog.set_level(logging.DEBUG)

    async def test(bed: Bed) -> None:
        async with running(bed, env={"FAKE_ACP_HTTP": "1"}) as harness:
            await harness.idle()
            assert [r.status for r in harness.results] == ["completed"]
        (session,) = bed.records("new_session")
        (server,) = session["mcp_servers"]
        assert server["type"] == "http" and server["name"] == "c2a"
        assert server["url"].startswith("http://127.0.0.1:") and "command" not in server
        (header,) = server["headers"]
        assert header["name"] == "Authorization" and header["value"].startswith("Bearer ")
        token = header["value"].removeprefix("Bearer ")
        assert len(token) >= 32 and token not in caplog.text
        (sent,) = bed.records("send")
        assert sent["event_id"] == DM and not sent["error"]
        assert bed.sends() == [DM]
        host, port = server["url"].removeprefix("http://").split("/")[0].split(":")
        with pytest.raises(ConnectionRefusedError):
            await asyncio.open_connection(host, int(port))

    scenario(tmp_path, test, dm())


def test_the_agent_stderr_becomes_log_records_of_the_agent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    async def test(bed: Bed) -> None:
        async with running(bed, env={"FAKE_ACP_STDERR": "fake agent \x1b[31mstarting"}) as harness:
            await harness.idle()

    with caplog.at_level(logging.INFO, logger="c2a.harness"):
        scenario(tmp_path, test, dm())
    said = [r.getMessage() for r in caplog.records if r.name == "c2a.harness.lead"]
    assert "harness lead: fake agent \\x1b[31mstarting" in said
    assert "fake agent" not in capfd.readouterr().err


def test_session_updates_show_as_status_never_as_chat(tmp_path: Path) -> None:
    async def test(bed: Bed) -> None:
        async with running(bed, progress_every_s=0) as harness:
            await harness.idle()
        assert bed.sends() == [MENTION]  # the reply, and not the agent's own text
        statuses = [a["status"] for a in bed.outbox("working")]
        assert statuses == [
            STATUS_TEXT,
            f"{STATUS_TEXT} (step 2 of 2)",
            f"{STATUS_TEXT} (using a tool)",
            f"{STATUS_TEXT} (thinking)",
            f"{STATUS_TEXT} (writing)",
            "",
        ]
        # Slack shows it in the thread the reply opens: the mention's own message.
        shown = {
            (a["thread"], a["messageId"], a["conversationKind"]) for a in bed.outbox("working")
        }
        assert shown == {(None, f"{BASE + 2}.000100", "channel")}

    scenario(tmp_path, test, mention())


# ---- changes mid-turn ------------------------------------------------------------------------


def test_an_edit_mid_turn_cancels_and_prompts_the_edited_text(tmp_path: Path) -> None:
    edit_ts = f"{BASE + 9}.000100"
    edited = f"{DM}~{edit_ts}"
    new_text = "is the deploy done yet?"

    async def test(bed: Bed) -> None:
        async with running(bed, env={"FAKE_ACP_HANG": DM_TEXT}) as harness:
            await until(lambda: bool(bed.records("prompt")))
            edit = slack_edit(
                DM_TS, edit_ts, DM_TEXT, new_text, channel="D0LEAD", channel_type="im"
            )
            await tell(bed, harness, slack_body(edit, via="lead"))
            await harness.idle()
        (cancel,) = bed.records("cancel")
        assert cancel["session_id"] == "s1"
        first, second = bed.records("prompt")
        assert first["hang"] and DM_TEXT in first["text"]
        assert second["session_id"] == "s1" and not second["text"].startswith(RESPONSE_RULES)
        assert new_text in second["text"] and edited in second["text"]
        assert DM_TEXT not in second["text"]
        assert bed.sends() == [edited]

    scenario(tmp_path, test, dm())


def test_an_urgent_message_mid_turn_cancels_and_prompts_it_with_what_is_left(
    tmp_path: Path,
) -> None:
    """The agent is busy on a question when its person says something urgent in the same
    conversation: the prompt in flight is cancelled and the agent is prompted again at once
    with both, and answers both; a plain message there would wait for the next turn."""
    urgent_ts = f"{BASE + 9}.000100"
    urgent_text = "urgent: prod is down, look at it now"
    urgent = f"slack:T0LOCAL:D0LEAD:{urgent_ts}"

    async def test(bed: Bed) -> None:
        async with running(bed, env={"FAKE_ACP_HANG": DM_TEXT}) as harness:
            await until(lambda: bool(bed.records("prompt")))
            said = slack_message(urgent_ts, urgent_text, channel="D0LEAD", channel_type="im")
            await tell(bed, harness, slack_body(said, via="lead"))
            await harness.idle()
        (cancel,) = bed.records("cancel")
        assert cancel["session_id"] == "s1"
        first, second = bed.records("prompt")
        assert first["hang"] and urgent_text not in first["text"]
        assert DM_TEXT in second["text"] and urgent_text in second["text"]
        assert sorted(bed.sends()) == sorted([DM, urgent])

    scenario(tmp_path, test, dm())


def test_a_delete_mid_turn_cancels_and_prompts_nothing_more(tmp_path: Path) -> None:
    async def test(bed: Bed) -> None:
        async with running(bed, env={"FAKE_ACP_HANG": DM_TEXT}) as harness:
            await until(lambda: bool(bed.records("prompt")))
            deleted_ts = f"{BASE + 9}.000100"
            delete = slack_delete(DM_TS, deleted_ts, DM_TEXT, channel="D0LEAD", channel_type="im")
            await tell(bed, harness, slack_body(delete, via="lead"))
            await harness.idle()
        assert [c["session_id"] for c in bed.records("cancel")] == ["s1"]
        assert len(bed.records("prompt")) == 1
        assert bed.sends() == []

    scenario(tmp_path, test, dm())


def test_cancelling_a_turn_sends_session_cancel(tmp_path: Path) -> None:
    async def test(bed: Bed) -> None:
        turn = await turn_of(bed.engine, DM)
        async with loop_for(bed, FAKE_ACP_HANG=DM_TEXT) as loop:
            task = asyncio.create_task(loop.run(turn))
            await until(lambda: bool(bed.records("prompt")))
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await until(lambda: bool(bed.records("cancel")))
        (cancel,) = bed.records("cancel")
        assert cancel["session_id"] == "s1"

    scenario(tmp_path, test, dm())


def test_a_turn_past_its_timeout_is_cancelled_and_fails_saying_why(tmp_path: Path) -> None:
    """`turn_timeout_s`: an agent that never ends its prompt holds its conversation no longer
    than that; the prompt is cancelled in the agent and the turn fails (the runtime then tells
    the asker)."""

    async def test(bed: Bed) -> None:
        loop = loop_for(bed, FAKE_ACP_HANG=DM_TEXT)
        async with loop:
            await loop.run(await turn_of(bed.engine, THANKS))  # the agent up, its session open
            loop.turn_timeout_s = 0.5
            result = await loop.run(await turn_of(bed.engine, DM))
            await until(lambda: bool(bed.records("cancel")))
        assert result.status == "failed" and result.failed == (DM,)
        assert result.reason == "the agent did not end its turn within 0.5 s"

    scenario(tmp_path, test, dm(), thanks())


# ---- permissions -----------------------------------------------------------------------------


def test_a_tool_outside_the_allow_list_is_denied_and_one_inside_is_allowed_once(
    tmp_path: Path,
) -> None:
    async def test(bed: Bed) -> None:
        turn = await turn_of(bed.engine, THANKS)  # a knock: the fake agent sends nothing
        async with loop_for(bed, FAKE_ACP_ASK="shell_exec,chat_send_message") as loop:
            assert loop.inject(dict(turn.events[0])) is False
            result = await loop.run(turn)
        assert result.status == "completed" and result.text == "ok"
        outcomes = {r["tool"]: r["outcome"] for r in bed.records("permission")}
        assert outcomes["shell_exec"] == {"outcome": "selected", "optionId": "no"}
        assert outcomes["chat_send_message"] == {"outcome": "selected", "optionId": "yes"}

    scenario(tmp_path, test, thanks())


# ---- restarts --------------------------------------------------------------------------------


@pytest.mark.parametrize("load", [True, False], ids=["loadSession", "no-loadSession"])
def test_killing_the_agent_mid_turn_loses_nothing(tmp_path: Path, load: bool) -> None:
    env = {"FAKE_ACP_HANG": DM_TEXT, **({"FAKE_ACP_LOAD": "1"} if load else {})}

    async def test(bed: Bed) -> None:
        async with running(bed, env=env) as harness:
            await until(lambda: bool(bed.records("prompt")))
            (first,) = bed.records("initialize")
            os.kill(first["pid"], signal.SIGKILL)
            await harness.idle()
            assert [r.status for r in harness.results] == ["completed"]
        first, second = bed.records("initialize")
        assert first["pid"] != second["pid"]
        hung, answered = bed.records("prompt")
        assert hung["hang"] and DM in answered["text"]
        if load:
            assert [r["session_id"] for r in bed.records("load_session")] == ["s1"]
            assert answered["session_id"] == "s1"
            assert not answered["text"].startswith(RESPONSE_RULES)
        else:
            assert [r["session_id"] for r in bed.records("new_session")] == ["s1", "s2"]
            assert answered["session_id"] == "s2" and answered["text"].startswith(RESPONSE_RULES)
        assert [r["event_id"] for r in bed.records("send")] == [DM]
        assert bed.sends() == [DM]

    scenario(tmp_path, test, dm())


@pytest.mark.parametrize("load", [True, False], ids=["loadSession", "no-loadSession"])
def test_sessions_outlive_the_host(tmp_path: Path, load: bool) -> None:
    env = {"FAKE_ACP_LOAD": "1"} if load else {}

    async def test(bed: Bed) -> None:
        turn = await turn_of(bed.engine, THANKS)
        async with loop_for(bed, **env) as loop:
            await loop.run(turn)
        async with loop_for(bed, **env) as loop:  # a new host process: only the file is left
            assert loop.sessions == {"slack:D0LEAD": "s1"}
            await loop.run(turn)
        first, second = bed.records("prompt")
        assert first["text"].startswith(RESPONSE_RULES)
        if load:
            assert [r["session_id"] for r in bed.records("load_session")] == ["s1"]
            assert second["session_id"] == "s1"
            assert not second["text"].startswith(RESPONSE_RULES)
        else:
            assert bed.records("load_session") == []
            assert second["session_id"] == "s2" and second["text"].startswith(RESPONSE_RULES)

    scenario(tmp_path, test, thanks())


def test_a_restored_session_gets_the_new_host_s_endpoint_and_answers_through_it(
    tmp_path: Path,
) -> None:
    """A host restart makes a new endpoint (a new token, and a port of its own): `session/load`
    of the saved session passes it, and the agent's next answer goes through it."""
    later = f"{BASE + 5}.000100"
    env = {"FAKE_ACP_LOAD": "1", "FAKE_ACP_HTTP": "1"}

    async def test(bed: Bed) -> None:
        async with loop_for(bed, **env) as loop:
            await loop.run(await turn_of(bed.engine, DM))
        asked = slack_message(later, "and staging?", channel="D0LEAD", channel_type="im")
        await bed.ingest(slack_body(asked, via="lead"))
        again = f"slack:T0LOCAL:D0LEAD:{later}"
        async with loop_for(bed, **env) as loop:  # a new host process
            await loop.run(await turn_of(bed.engine, again))
        (opened,) = bed.records("new_session")
        (loaded,) = bed.records("load_session")
        ((first,), (second,)) = opened["mcp_servers"], loaded["mcp_servers"]
        assert loaded["session_id"] == opened["session_id"] == "s1"
        assert first["type"] == second["type"] == "http"
        assert first["headers"] != second["headers"]  # the new host's token
        assert [(r["event_id"], r["error"]) for r in bed.records("send")] == [
            (DM, False),
            (again, False),
        ]
        assert bed.sends() == [DM, again]

    scenario(tmp_path, test, dm())


# ---- settings --------------------------------------------------------------------------------


def test_settings_are_validated(tmp_path: Path) -> None:
    async def test(bed: Bed) -> None:
        good = {"backend": "acp", "command": ["agent"], "manifest": "m", "store": "d/t.sqlite3"}
        harness = from_settings(
            harness_context(bed.engine, "lead"), {**good, "allow": ["chat_react"]}
        )
        assert harness.loop.policy.allow == {"chat_react"}
        assert harness.loop.sessions_path == Path("d/t.acp-lead.json")
        assert harness.loop.turn_timeout_s is None  # a long task is no fault: none by default
        await harness.loop.aclose()
        with pytest.raises(ManifestError, match=r"agents\.lead\.harness\.allow"):
            from_settings(harness_context(bed.engine, "lead"), {**good, "allow": ["*"]})
        with pytest.raises(ManifestError, match=r"agents\.lead\.harness\.command"):
            from_settings(harness_context(bed.engine, "lead"), {**good, "command": []})

    scenario(tmp_path, test)


def test_the_chat_tools_ledger_is_the_run_s_own() -> None:
    """In a run, `manifest` and `store` default to the run's; a `store` elsewhere is refused
    (the answers would be written where nothing sends them), and so is any `store` in a run
    whose ledger is not a SQLite file, which has no stdio tools (None); outside a run both must
    be named."""
    outside = HarnessContext(cast(Any, SimpleNamespace(agent="lead")), cast(Any, None))
    run = replace(outside, manifest="/w/local.yaml", ledger="/w/.c2a/local.sqlite3")
    assert ledger_of(run, None, None) == ("/w/local.yaml", "/w/.c2a/local.sqlite3")
    assert ledger_of(run, "m.yaml", "/w/.c2a/../.c2a/local.sqlite3")[0] == "m.yaml"
    with pytest.raises(ManifestError, match=r"harness\.store is '/w/other\.sqlite3', but"):
        ledger_of(run, None, "/w/other.sqlite3")
    assert ledger_of(replace(run, ledger=""), None, None) is None
    with pytest.raises(ManifestError, match=r"store is 't\.sqlite3', but .* is in PostgreSQL"):
        ledger_of(replace(run, ledger=""), None, "t.sqlite3")
    with pytest.raises(ManifestError, match=r"name the manifest and store"):
        ledger_of(outside, None, None)
    assert ledger_of(outside, "m.yaml", "t.sqlite3") == ("m.yaml", "t.sqlite3")
