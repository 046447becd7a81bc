"""`c2a run` end to end in-process: the real slack-bolt against a fake Slack, the built-in model
loop against a scripted model, the SQLite ledger on disk; and its one-line startup errors."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import logging
import socket
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import HUMAN, LEAD, TEAM, slack_body, slack_join, slack_message
from fakes import openai_server as fake_openai
from fakes.slack import FakeSlack

from c2a.cli import main
from c2a.logs import JsonFormatter, decision_fields, decision_text
from c2a.platforms import installed
from c2a.run import WorkspaceRun, load_workspaces, run_workspaces
from core.actions import Post, React
from core.emission import Queued
from core.signals import Signal
from harness_bridge.backends.builtin import BuiltinHarness
from harness_bridge.backends.text_reply import TextReplyLoop

BOT_TOKEN = "xoxb-lead-test"
APP_TOKEN = "xapp-1-lead-test"
ENV = {"SLACK_LEAD_BOT_TOKEN": BOT_TOKEN, "SLACK_LEAD_APP_TOKEN": APP_TOKEN}
_ticks = itertools.count(1)


def fresh_ts() -> str:
    """A Slack ts of now (the host runs on the system clock; must_respond expires)."""
    return f"{time.time() + next(_ticks) / 1000:.6f}"


def write_manifest(
    directory: Path, *, api_url: str, model_url: str, name: str = "live", **lead: Any
) -> Path:
    agent: dict[str, Any] = {
        "lead": True,
        "slack": {
            "user_id": LEAD,
            "bot_token_env": "SLACK_LEAD_BOT_TOKEN",
            "app_token_env": "SLACK_LEAD_APP_TOKEN",
        },
        "harness": {"backend": "openai", "base_url": model_url, "model": "fake", "quiet_ms": 50},
        **lead,
    }
    manifest = {
        "version": 1,
        "workspace": name,
        "slack": {"team_id": TEAM, "api_url": api_url},
        "agents": {"lead": agent},
        "channels": {"C0GEN": {}},
    }
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(manifest))
    return path


async def wait_for(predicate: Any, what: str, seconds: float = 10.0) -> None:
    try:
        async with asyncio.timeout(seconds):
            while not predicate():
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def test_a_mention_of_the_lead_gets_exactly_one_threaded_reply_and_a_clean_stop(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ts = fresh_ts()
    event_id = f"slack:{TEAM}:C0GEN:{ts}"
    reply = {"target": {"conversation": "C0GEN"}, "text": "On it.", "inReplyTo": event_id}
    script = [
        fake_openai.completion(calls=[fake_openai.call("chat_send_message", reply)]),
        fake_openai.completion("Done."),
    ]

    async def scenario() -> None:
        async with (
            asyncio.timeout(30),
            FakeSlack() as slack,
            fake_openai.FakeOpenAI(script) as model,
        ):
            slack.add_bot(BOT_TOKEN, LEAD, "B0LEAD", team_id=TEAM)
            manifest = write_manifest(tmp_path, api_url=slack.api_url, model_url=model.base_url)
            stop = asyncio.Event()
            runs: list[WorkspaceRun] = []

            def started(started_runs: list[WorkspaceRun]) -> None:
                runs.extend(started_runs)

            task = asyncio.create_task(
                run_workspaces(
                    [manifest],
                    stop=stop,
                    environ=ENV,
                    data_dir=tmp_path / "data",
                    started=started,
                    metrics_port=0,
                )
            )
            await slack.wait_connected(1)
            await wait_for(lambda: runs, "the workspace to start")
            await slack.send_event(slack_body(slack_join(LEAD), via="lead"), app_token=APP_TOKEN)
            mention = slack_message(ts, "<@U0LEAD> can you check the deploy?", user=HUMAN)
            await slack.send_event(slack_body(mention, via="lead"), app_token=APP_TOKEN)

            await wait_for(lambda: slack.calls_to("chat.postMessage"), "the reply to be posted")
            await wait_for(lambda: len(model.requests) == 2, "the model's second call")
            counted = runs[0].metrics.render()
            assert 'c2a_events_total{platform="slack",workspace="live"} 2' in counted
            assert 'policy="must_respond",workspace="live"} 1' in counted
            stop.set()
            await asyncio.wait_for(task, 20)

            [post] = slack.calls_to("chat.postMessage")
            assert post.token == BOT_TOKEN
            assert post.params["channel"] == "C0GEN"
            assert post.params["thread_ts"] == ts
            assert "On it." in post.params["text"]
            assert (tmp_path / "data" / "live.sqlite3").is_file()
            # The ledger is closed on the way out.
            assert runs[0].store._db is None

    with caplog.at_level(logging.INFO):
        asyncio.run(scenario())
    decisions = [r for r in caplog.records if r.name == "c2a.decisions"]
    fields = [r.decision for r in decisions if getattr(r, "decision", {}).get("policy")]
    assert {
        "agent": "lead",
        "directedness": "to_me",
        "policy": "must_respond",
        "reason": "direct_mention",
        "event_id": event_id,
    }.items() <= fields[-1].items()
    # The message text never reaches the log.
    assert all("check the deploy" not in r.getMessage() for r in caplog.records)
    assert any(r.getMessage() == "stopped" for r in caplog.records)


def test_json_log_lines_carry_the_decision_fields() -> None:
    record = logging.LogRecord("c2a.decisions", logging.INFO, __file__, 1, "a line", None, None)
    record.decision = {"agent": "lead", "policy": "must_respond", "mode": "buffered"}
    line = json.loads(JsonFormatter().format(record))
    assert line["logger"] == "c2a.decisions"
    assert line["level"] == "info"
    assert line["message"] == "a line"
    assert line["policy"] == "must_respond"
    assert "time" in line


def test_a_line_for_an_outbound_action_says_what_it_acts_on_or_where_it_goes() -> None:
    place = {"agent": "lead", "platform": "webchat", "conversation": "general"}
    react = React(**place, key="k1", message_id="3", signal=Signal.QUEUED, event_id="wc:3")
    notice = Post(**place, key="k2", text="...", visibility="ephemeral", in_reply_to="wc:3")
    status = Post(**place, key="k3", text="...")
    said = [decision_text(decision_fields("local", Queued("lead", a))) for a in (react, notice)]
    assert said == ["local lead         react queued on wc:3", "local lead         send on wc:3"]
    assert decision_text(decision_fields("local", Queued("lead", status))).endswith(
        "send in general"
    )


def test_an_unset_token_variable_exits_2_with_one_line_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("SLACK_LEAD_BOT_TOKEN", raising=False)
    monkeypatch.setenv("SLACK_LEAD_APP_TOKEN", APP_TOKEN)
    manifest = write_manifest(
        tmp_path, api_url="http://127.0.0.1:9/api/", model_url="http://127.0.0.1:9/v1"
    )
    status = main(["run", "--manifest", str(manifest), "--data-dir", str(tmp_path / "d")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1
    assert "SLACK_LEAD_BOT_TOKEN" in err[0]
    assert "Traceback" not in err[0]
    assert not (tmp_path / "d").exists()  # nothing started


def test_a_wrong_manifest_key_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = write_manifest(
        tmp_path, api_url="http://127.0.0.1:9/api/", model_url="http://127.0.0.1:9/v1", lede=True
    )
    status = main(["run", "--manifest", str(manifest)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1
    assert "lede" in err[0]


def test_a_model_server_nobody_runs_exits_2_saying_what_to_do(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for variable, value in ENV.items():
        monkeypatch.setenv(variable, value)
    # Port 9 (discard) on loopback: nothing listens there in a test environment.
    manifest = write_manifest(
        tmp_path, api_url="http://127.0.0.1:9/api/", model_url="http://127.0.0.1:9/v1"
    )
    status = main(["run", "--manifest", str(manifest), "--data-dir", str(tmp_path / "d")])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1
    assert "agents.lead.harness.base_url" in err[0]
    assert "start the model server" in err[0]


def test_a_web_chat_port_in_use_exits_2_saying_how_to_pick_another(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second `make run` beside the first: one line naming the port and both ways out."""
    manifest = tmp_path / "chat.yaml"
    manifest.write_text("version: 1\nworkspace: w\nwebchat: {}\nagents: {lead: {lead: true}}\n")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        argv = ["run", "-m", str(manifest), "--data-dir", str(tmp_path / "d")]
        status = main([*argv, "--webchat-port", str(port)])
    [said] = [line for line in capsys.readouterr().err.splitlines() if line.startswith("c2a:")]
    assert status == 2
    assert f"cannot listen on 127.0.0.1:{port}" in said
    assert "webchat.port in the manifest" in said and "--webchat-port 0" in said


@pytest.mark.parametrize("drafting", ["webchat", "slack"])
def test_each_harness_gets_its_agents_port_and_the_platforms_that_say_they_take_drafts(
    tmp_path: Path, drafting: str
) -> None:
    harness = {"backend": "openai", "base_url": "http://x/v1", "model": "m", "reply": "text"}
    manifest = write_manifest(
        tmp_path, api_url="http://x/api/", model_url="http://x/v1", harness=harness
    )
    platforms = {
        name: dataclasses.replace(platform, streams_drafts=name == drafting)
        for name, platform in installed().items()
    }
    [workspace] = load_workspaces([manifest], platforms)
    run = WorkspaceRun(workspace, tmp_path, ENV, platforms=platforms)
    run.prepare()
    lead = run.harnesses["lead"]
    assert isinstance(lead, BuiltinHarness) and isinstance(lead.loop, TextReplyLoop)
    assert lead.port.agent == "lead" and lead.deliveries is run.host.engine.deliveries
    assert lead.loop.streaming == {drafting}


def test_the_chat_platforms_take_drafts_and_slack_and_discord_say_how_long() -> None:
    platforms = installed()
    drafting = sorted(name for name, p in platforms.items() if p.streams_drafts)
    assert drafting == ["discord", "slack", "webchat"]
    limits = {name: p.draft_limit for name, p in platforms.items() if p.draft_limit}
    assert limits == {"slack": 2_500, "discord": 1_800}


def test_two_manifests_naming_one_workspace_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first = write_manifest(tmp_path, api_url="http://x/api/", model_url="http://x/v1")
    (tmp_path / "again").mkdir()
    second = write_manifest(tmp_path / "again", api_url="http://x/api/", model_url="http://x/v1")
    status = main(["run", "-m", str(first), "-m", str(second)])
    assert status == 2
    assert "also in" in capsys.readouterr().err
    assert main(["run", str(first), str(second)]) == 2  # named as `c2a check` names one
    assert "also in" in capsys.readouterr().err


def test_run_with_no_manifest_says_how_to_name_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run"]) == 2
    assert capsys.readouterr().err == "c2a run: name a workspace manifest: c2a run workspace.yaml\n"


def test_run_help_names_its_options(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["run", "--help"])
    out = capsys.readouterr().out
    assert exit_.value.code == 0
    for option in ("--manifest", "--data-dir", "--log-format"):
        assert option in out


def test_sigterm_stops_the_process_cleanly_with_status_0(tmp_path: Path) -> None:
    manifest = tmp_path / "solo.yaml"
    manifest.write_text("version: 1\nworkspace: solo\nagents:\n  lead: {lead: true}\n")

    async def scenario() -> tuple[int, list[dict[str, Any]]]:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "c2a.cli",
            "run",
            "-m",
            str(manifest),
            "--data-dir",
            str(tmp_path / "data"),
            "--log-format",
            "json",
            stderr=asyncio.subprocess.PIPE,
        )
        assert process.stderr is not None
        lines: list[dict[str, Any]] = []
        try:
            async with asyncio.timeout(20):
                while not any("running" in line["message"] for line in lines):
                    lines.append(json.loads(await process.stderr.readline()))
                process.terminate()
                lines.extend(json.loads(raw) for raw in (await process.stderr.read()).splitlines())
                return await process.wait(), lines
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()

    status, lines = asyncio.run(scenario())
    assert status == 0
    assert lines[-1]["message"] == "stopped"
    assert (tmp_path / "data" / "solo.sqlite3").is_file()


def test_the_data_directory_is_created_private_and_an_open_one_is_warned_about(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from c2a.run_inputs import private_directory

    fresh = tmp_path / "fresh" / ".c2a"
    private_directory(fresh)
    assert fresh.stat().st_mode & 0o777 == 0o700
    assert "other users" not in caplog.text

    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    shared.chmod(0o755)
    private_directory(shared)
    assert shared.stat().st_mode & 0o777 == 0o755, "an existing directory is left as it is"
    assert "can be read by other users" in caplog.text
