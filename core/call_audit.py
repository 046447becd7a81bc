"""What the audit log keeps of one tool call: the arguments as the model wrote them but with
message text and file contents as their lengths only, the result, all redacted, and nothing
the ledger's JSON cannot hold."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from core.agent_port import ToolCall
from core.redact import Redactor

__all__ = ["audit_detail"]


def audit_detail(call: ToolCall, redactor: Redactor) -> dict[str, Any]:
    """The call's `{"arguments", "result"}` as the audit log stores it: redacted, since a
    model's arguments and a refusal's reason may quote a secret."""
    shown = dict(call.arguments or {})
    if isinstance(shown.get("text"), str):
        shown["text"] = _length(shown["text"])
    if isinstance(shown.get("files"), list):
        shown["files"] = [_file_shown(f) for f in shown["files"]]
    result = dict(call.result)
    detail: dict[str, Any] = redactor.data({"arguments": shown, "result": result})
    try:
        orjson.dumps(detail)
    except TypeError as exc:  # a model can write what the ledger's JSON cannot hold
        detail = {"arguments": f"[not storable: {exc}]", "result": result}
    return detail


def _length(text: str) -> str:
    return f"[{len(text)} characters]"


def _file_shown(file: Any) -> Any:
    """A file in a logged call: its name and its content's length, never the content."""
    if not isinstance(file, Mapping) or not isinstance(file.get("content"), str):
        return file
    return {**file, "content": _length(file["content"])}
