"""Nothing `c2a run` logs holds a secret: the handler `configure_logging` installs redacts every
record, its arguments, its traceback and its decision fields, in text and JSON alike, and a
workspace's configured secrets once `redact_logs` is told them."""

from __future__ import annotations

import io
import json
import logging

import pytest
from secret_samples import CONFIGURED_SECRET, SECRETS, SHAPES, every_secret

from c2a.logs import DECISIONS, configure_logging, decision_text, redact_logs
from core.redact import Redactor

TOKEN = SECRETS["slack-token"][0]
KEY = SECRETS["anthropic-key"][0]

log = logging.getLogger("c2a.test.secrets")


def leaks(where: str) -> list[str]:
    return [secret for secret in every_secret() if secret in where]


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_logged_secret_is_redacted_in_the_message_its_arguments_and_its_traceback(
    fmt: str,
) -> None:
    stream = io.StringIO()
    configure_logging(fmt, stream)
    log.warning("connecting with %s", TOKEN)
    log.info(f"harness stderr: export ANTHROPIC_API_KEY={KEY}")
    try:
        raise RuntimeError("401 for Authorization: Bearer 0123456789abcdef.session")
    except RuntimeError:
        log.exception("request failed", stack_info=True)
    log.info("decided", extra={"decision": {"agent": "lead", "reason": f"says {TOKEN}"}})

    written = stream.getvalue()
    assert leaks(written) == []
    assert "0123456789abcdef.session" not in written
    assert "connecting with [redacted:slack-token]" in written
    assert "ANTHROPIC_API_KEY=[redacted:anthropic-key]" in written
    assert "Authorization: Bearer [redacted:authorization]" in written
    assert "RuntimeError" in written  # the traceback is still there, less its secret
    if fmt == "json":
        lines = [json.loads(line) for line in written.splitlines()]
        assert lines[-1]["reason"] == "says [redacted:slack-token]"


def test_a_workspaces_configured_secret_is_redacted_once_the_logs_are_told_it() -> None:
    stream = io.StringIO()
    configure_logging("text", stream)
    redact_logs(Redactor([CONFIGURED_SECRET], SHAPES))
    log.error("auth.test refused %s", CONFIGURED_SECRET)
    assert stream.getvalue().rstrip().endswith("auth.test refused [redacted:configured-secret]")


def test_a_record_whose_arguments_do_not_fit_is_still_written_redacted() -> None:
    stream = io.StringIO()
    configure_logging("text", stream)
    log.warning("two %s %s", TOKEN)  # noqa: PLE1206 (the mistake is the point)
    written = stream.getvalue()
    assert leaks(written) == []
    assert "[redacted:slack-token]" in written


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_a_decision_line_is_said_from_its_redacted_fields(fmt: str) -> None:
    stream = io.StringIO()
    configure_logging(fmt, stream)
    fields = {
        "workspace": "team",
        "agent": "lead",
        "directedness": "to_me",
        "policy": "must_respond",
        "mode": "buffered",
        "reason": "mentioned",
        "event_id": f"webchat:team:general:{TOKEN}",
    }
    DECISIONS.info(decision_text(fields), extra={"decision": fields})
    written = stream.getvalue()
    assert leaks(written) == []
    said = decision_text({**fields, "event_id": "webchat:team:general:[redacted:slack-token]"})
    if fmt == "json":
        line = json.loads(written)
        assert line["message"] == said
        assert line["event_id"] == "webchat:team:general:[redacted:slack-token]"
    else:
        assert written.rstrip().endswith(said)


def test_a_decision_record_with_fields_of_its_own_keeps_its_message_redacted() -> None:
    stream = io.StringIO()
    configure_logging("json", stream)
    DECISIONS.info("note %s", TOKEN, extra={"decision": {"agent": "lead", "why": TOKEN}})
    line = json.loads(stream.getvalue())
    assert line["message"] == "note [redacted:slack-token]"
    assert line["why"] == "[redacted:slack-token]"


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_what_a_record_quotes_can_neither_drive_the_terminal_nor_pass_for_a_record(
    fmt: str,
) -> None:
    stream = io.StringIO()
    configure_logging(fmt, stream)
    forged = "2026-01-01 00:00:00,000 INFO    local lead to_me/must_respond/immediate"
    log.warning("reaction %s on %s", "\x1b[2J\x07\x9b31m\u202eko", f"7\n{forged}\r")
    log.info("decided", extra={"decision": {"agent": "lead", "event_id": "a\x1b]0;x\x07\u2066b"}})
    written = stream.getvalue()
    for unshown in ("\x1b", "\x07", "\x9b", "\u202e", "\u2066", "\r"):
        assert unshown not in written
    lines = written.splitlines()
    if fmt == "json":
        said = [json.loads(line) for line in lines]  # still one JSON object a line
        assert said[0]["message"] == f"reaction \x1b[2J\x07\x9b31m\u202eko on 7\n{forged}\r"
        assert said[1]["event_id"] == "a\x1b]0;x\x07\u2066b"
    else:
        assert len(lines) == 3
        assert "reaction \\x1b[2J\\x07\\x9b31m\\u202eko on 7" in lines[0]
        assert lines[1] == f"    {forged}\\r"  # indented: only a record starts a line
