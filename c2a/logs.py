"""How `c2a run` logs: readable text or one JSON object a line, one line per decision (agent,
directedness/policy/mode, reason, event id; never message text), and no secrets: every record
passes a `RedactingFilter` on the way to the handler, whoever logged it (the platform
libraries, a harness's stderr, an exception's traceback). Both formats make what a record
quotes safe to show: a reaction's name, an id or an error's words come from chat platforms and
models, and must neither drive the terminal the log is read in nor pass for a record of its
own (`TextFormatter`, `JsonFormatter`)."""

from __future__ import annotations

import contextlib
import json
import logging
import re
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from c2a.platforms import secret_shapes
from core.action_records import to_record
from core.emission import Cancel, Delivery, Emission, Escalation, Queued
from core.redact import Redactor

__all__ = [
    "DECISIONS",
    "JsonFormatter",
    "RedactingFilter",
    "TextFormatter",
    "configure_logging",
    "decision_fields",
    "decision_text",
    "redact_logs",
]

DECISIONS = logging.getLogger("c2a.decisions")

# Control characters but tab and line feed, and the marks that reorder text on screen.
_UNSHOWN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


class TextFormatter(logging.Formatter):
    """`time LEVEL message`, safe to show: each control character escaped (`\\x1b`, `\\r`), so
    none moves the cursor, clears the screen or reorders the line, and each line after a
    record's first (a traceback, a quoted line feed) indented, so only a record starts a line."""

    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record).replace("\n", "\n    ")
        return _UNSHOWN.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, and a decision's fields. JSON
    escapes line feeds and most control characters; the rest (delete, the C1 controls, the
    marks that reorder text) are written as `\\u` escapes too."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        fields = getattr(record, "decision", None)
        if isinstance(fields, Mapping):
            line.update(fields)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:  # as `RedactingFilter` left it
            line["error"] = record.exc_text
        return _UNSHOWN.sub(
            lambda m: f"\\u{ord(m.group()):04x}", json.dumps(line, ensure_ascii=False)
        )


class RedactingFilter(logging.Filter):
    """Redacts a record before any formatter reads it: its message with the arguments put in,
    its exception's and stack's text, and a decision's fields. A decision line's message is
    its fields in words (`decision_text`), so it is said again from the redacted fields rather
    than redacted a second time. Never drops a record."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self.redactor = redactor or Redactor(shapes=secret_shapes())
        self._formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        fields = getattr(record, "decision", None)
        if isinstance(fields, Mapping):
            record.decision = fields = self.redactor.data(fields)
            if record.name == DECISIONS.name and not record.exc_info:
                # A decision line is its fields in words: said again from them, redacted
                # (fields `decision_fields` did not make: the record goes on as any other).
                with contextlib.suppress(KeyError):
                    record.msg, record.args = decision_text(fields), None
                    return True
        redact = self.redactor.text
        try:
            message = record.getMessage()
        except Exception:  # arguments that do not fit the format: show both, redacted
            message = f"{record.msg} {record.args!r}"
        record.msg, record.args = redact(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        if record.stack_info:
            record.stack_info = redact(record.stack_info)
        return True


def redact_logs(redactor: Redactor) -> None:
    """From now on the installed handlers also redact `redactor`'s configured secrets (a
    workspace's tokens, once its manifest is read)."""
    for handler in logging.getLogger().handlers:
        for found in handler.filters:
            if isinstance(found, RedactingFilter):
                found.redactor = found.redactor.with_configured(redactor.configured)


def configure_logging(fmt: str = "text", stream: Any = None, level: int = logging.INFO) -> None:
    """Send every log line to `stream` (stderr) as text or, with `fmt="json"`, JSON lines,
    secrets redacted."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.addFilter(RedactingFilter())
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter())
    # No line shows where a call was made, nor its thread or process: they are not gathered
    # (the logging HOWTO's "Optimization"; the caller's frame is a stack walk per line). With
    # no caller looked up, a `stack_info=True` call gets no stack; nothing here asks for one.
    logging._srcfile = None
    logging.logThreads = logging.logProcesses = logging.logMultiprocessing = False
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # The platform libraries narrate every reconnect at INFO, and the MCP endpoint's server
    # every start and every session (a coding agent's turn); their warnings are enough.
    for noisy in ("slack_bolt", "slack_sdk", "discord", "aiohttp.access", "uvicorn", "mcp"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def decision_fields(workspace: str, emission: Emission) -> dict[str, Any] | None:
    """What a decision line says about one emission; never the message text. None for
    emissions that are not decisions (typing)."""
    base = {"workspace": workspace, "agent": emission.agent}
    match emission:
        case Queued(action=action):
            record = to_record(action)
            return {
                **base,
                "action": record["action"],
                "signal": record.get("signal"),
                # what it acts on, or answers (a notice)
                "event_id": record.get("eventId") or record.get("inReplyTo"),
                "conversation": record["conversation"],
            }
        case Escalation():
            return {
                **base,
                "escalation": emission.reason,
                "conversation": emission.conversation,
                "event_id": emission.event_id,
            }
        case Delivery(decision=decision):
            fields = {
                **base,
                "directedness": decision.directedness.value,
                "policy": decision.policy.value,
                "mode": decision.mode.value,
                "reason": decision.reason,
                "event_id": decision.event_id,
            }
            if decision.claimed_by is not None:
                fields["claimed_by"] = f"agent:{decision.claimed_by}"
            return fields
        case Cancel():
            return {**base, "cancelled": emission.reason, "event_id": emission.event_id}
    return None


def decision_text(fields: Mapping[str, Any]) -> str:
    head = f"{fields['workspace']} {fields['agent']:<12}"
    if "policy" in fields:
        axes = f"{fields['directedness']}/{fields['policy']}/{fields['mode']}"
        claim = f" claimed by {fields['claimed_by']}" if "claimed_by" in fields else ""
        return f"{head} {axes:<40} {fields['reason']:<22} {fields['event_id']}{claim}"
    if "escalation" in fields:
        return f"{head} escalation {fields['escalation']} in {fields['conversation']}"
    if "cancelled" in fields:
        return f"{head} cancelled ({fields['cancelled']}) {fields['event_id']}"
    what = " ".join(filter(None, (fields["action"], fields["signal"])))
    on = fields["event_id"]
    return f"{head} {what} on {on}" if on else f"{head} {what} in {fields['conversation']}"


# ---- one workspace -------------------------------------------------------------------------
