"""The `c2a` command as a person uses it: clear errors, exit codes, and the replay contract."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import LEAD, LOCAL, line, slack_body, slack_message

from c2a.cli import main
from c2a.platforms import installed

AT = "2026-01-01T00:00:01Z"


def test_check_prints_what_the_manifest_means(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(LOCAL)]) == 0
    out = capsys.readouterr().out
    assert "agent lead (lead: escalations go here): slack U0LEAD" in out
    assert (
        "role backend: slack group S0BACK, discord role 700000000000000001 -> worker-1, worker-2"
        in out
    )
    assert out.endswith("ok\n")


@pytest.mark.parametrize(
    "words",
    [
        ["check", "{m}"],
        ["check", "--manifest", "{m}"],
        ["discord", "invite", "--agent", "lead", "{m}"],
        ["discord", "invite", "--agent", "lead", "-m", "{m}"],
        ["slack", "manifest", "{m}", "--agent", "lead"],
        ["slack", "manifest", "--agent", "lead", "--manifest", "{m}"],
    ],
)
def test_a_command_takes_its_manifest_as_c2a_run_does_or_named(
    words: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """`c2a init` says `c2a check X, then c2a run X`; the other commands reading a manifest take
    it the same way, and as `--manifest X` as before."""
    monkeypatch.delenv("DISCORD_LEAD_TOKEN", raising=False)  # no /c2a to register
    assert main([w.format(m=LOCAL) for w in words]) == 0
    assert capsys.readouterr().out


@pytest.mark.parametrize(
    ("words", "said"),
    [
        (["slack", "verify"], "one of the arguments MANIFEST --manifest/-m is required"),
        (["check", "a.yaml", "-m", "b.yaml"], "argument --manifest/-m: not allowed with"),
        (["discord", "invite", "--agent", "lead"], "one of the arguments MANIFEST"),
    ],
)
def test_a_manifest_named_twice_or_never_is_a_usage_error(
    words: list[str], said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(words)
    assert exited.value.code == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "version: 1\nworkspace: w\nagents: {a: {slak: {}}}\n",
            "line 3: agents.a.slak: unknown key",
        ),
        ("version: 1\nagents: {a: {}}\n", "workspace: required key is missing"),
        ("version: 2\nworkspace: w\nagents: {a: {}}\n", "line 1: version: Input should be 1"),
        (
            "version: 1\nworkspace: w\nagents: {a: {roles: [x]}}\n",
            "line 3: agents.a.roles: role 'x' is not under roles:",
        ),
        (
            "version: 1\nworkspace: w\nagents: {a: {lead: true}, b: {lead: true}}\n",
            "agents: only one agent may be lead, found a, b",
        ),
        (
            "version: 1\nworkspace: w\nagents: {a: {slack: {user_id: lower}}}\n",
            "agents.a.slack.user_id",
        ),
        ("version: 1\nworkspace: [unclosed\n", "line 3, column 1: not valid YAML"),
    ],
)
def test_a_bad_manifest_names_file_key_and_problem_and_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, expected: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and expected in err
    assert "Traceback" not in err


def test_a_manifest_without_tokens_is_enough_for_check_and_replay(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text(
        "version: 1\nworkspace: w\nslack: {team_id: T0LOCAL}\n"
        "agents: {lead: {slack: {user_id: U0LEAD}}}\n"
    )
    trace = tmp_path / "t.jsonl"
    event = slack_message("1767225601.000100", "hi", channel="D0LEAD", channel_type="im")
    trace.write_text(line(AT, "slack", slack_body(event, via="lead")) + "\n")
    assert main(["check", str(path)]) == 0
    assert main(["replay", "--manifest", str(path), str(trace), "--out", str(tmp_path / "o")]) == 0


def test_malformed_lines_are_reported_with_line_numbers_and_the_replay_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = slack_message(
        "1767225601.000100", f"<@{LEAD}> hello", channel="D0LEAD", channel_type="im"
    )
    later = slack_message(
        "1767225609.000100", f"<@{LEAD}> still there?", channel="D0LEAD", channel_type="im"
    )
    no_ts = slack_message("1767225602.000100", "x", channel="D0LEAD", channel_type="im")
    del no_ts["ts"]
    lines = [
        line(AT, "slack", slack_body(good, via="lead")),
        "{not json",
        json.dumps({"at": AT, "platform": "irc", "payload": {}}),
        line(AT, "slack", slack_body(no_ts, via="lead")),
        json.dumps({"at": "yesterday", "platform": "slack", "payload": {}}),
        line(AT, "slack", slack_body(later, via="lead"), via="nobody"),
        line(AT, "slack", slack_body(later, via="lead")),
    ]
    trace = tmp_path / "trace.jsonl"
    trace.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    status = main(["replay", "--manifest", str(LOCAL), str(trace), "--out", str(out), "--stats"])
    err = capsys.readouterr().err
    assert status == 1
    assert f"{trace}:2: not JSON" in err
    assert f"{trace}:3: platform must be one of discord, slack, webchat, not 'irc'" in err
    assert f"{trace}:4: " in err and "ts" in err.split(f"{trace}:4: ")[1].splitlines()[0]
    assert f"{trace}:5: at is not an RFC 3339 time" in err
    assert f"{trace}:6: via names unknown agent 'nobody'" in err
    assert "Traceback" not in err
    stats = json.loads(err.strip().splitlines()[-1])
    assert (stats["lines"], stats["events"], stats["errors"]) == (7, 2, 5)
    delivered = [
        json.loads(x)["rpc"]["params"]["eventId"]
        for x in out.read_text().splitlines()
        if "rpc" in json.loads(x)
    ]
    assert delivered == [
        "slack:T0LOCAL:D0LEAD:1767225601.000100",
        "slack:T0LOCAL:D0LEAD:1767225609.000100",
    ]


def test_replay_output_is_deterministic(tmp_path: Path) -> None:
    trace = Path(__file__).parents[2] / "manifests" / "examples" / "local-trace.jsonl"
    outputs = []
    for n in range(2):
        out = tmp_path / f"out{n}.jsonl"
        assert main(["replay", "--manifest", str(LOCAL), str(trace), "--out", str(out)]) == 0
        outputs.append(out.read_text())
    assert outputs[0] == outputs[1] and outputs[0]


def test_the_compact_view_adds_spec_001_fields(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    event = slack_message("1767225601.000100", "deploy?", channel="D0LEAD", channel_type="im")
    trace.write_text(line(AT, "slack", slack_body(event, via="lead")) + "\n")
    out = tmp_path / "o.jsonl"
    args = [
        "replay",
        "-m",
        str(LOCAL),
        str(trace),
        "-o",
        str(out),
        "--protocol-version",
        "2026-06-24",
    ]
    assert main(args) == 0
    params = json.loads(out.read_text().splitlines()[0])["rpc"]["params"]
    assert (params["addressedToMe"], params["policy"], params["content"]) == (
        True,
        "must_respond",
        "deploy?",
    )
    assert params["contentParts"] == [{"type": "text", "text": "deploy?"}]


def test_a_harness_setting_passes_check_and_reaches_its_backend(tmp_path: Path) -> None:
    from core.manifest import load_manifest

    path = tmp_path / "m.yaml"
    path.write_text(
        "version: 1\nworkspace: w\nagents:\n  lead:\n    harness:\n      backend: openai\n"
        "      base_url: http://127.0.0.1:11434/v1\n      model: qwen2.5:7b\n"
    )
    assert main(["check", str(path)]) == 0
    harness = load_manifest(path, platforms=installed()).agents["lead"].harness
    assert harness is not None
    assert harness.settings() == {
        "backend": "openai",
        "base_url": "http://127.0.0.1:11434/v1",
        "model": "qwen2.5:7b",
    }
