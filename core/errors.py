"""The project's one exception tree; every error carries CCCS's `{code, message, details}`.

    C2AError                 base: code, message, details; str() is for people
    ├── PayloadError         a native platform payload the normaliser cannot read
    ├── ManifestError        a workspace manifest that does not validate
    ├── TraceError           a replay trace line that is not a trace record
    └── StoreError           the ledger refused or failed an operation

Foreign exceptions (pydantic, sqlite3, json) are mapped to these at the boundary that meets them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["C2AError", "ManifestError", "PayloadError", "StoreError", "TraceError"]


class C2AError(Exception):
    """Base of every error the project raises on purpose."""

    code = "error"

    def __init__(self, message: str, details: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details: dict[str, Any] = dict(details or {})

    def to_dict(self) -> dict[str, Any]:
        """The CCCS error shape."""
        shape: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.details:
            shape["details"] = self.details
        return shape

    def __str__(self) -> str:
        return self.message


class PayloadError(C2AError):
    """A platform payload is missing something the normaliser needs, or has the wrong type."""

    code = "invalid_payload"


class ManifestError(C2AError):
    """A workspace manifest is unreadable or invalid; the message names file, key path and why."""

    code = "invalid_manifest"


class TraceError(C2AError):
    """A replay trace line is not JSON or not a trace record."""

    code = "invalid_trace_line"


class StoreError(C2AError):
    """The ledger could not do what was asked."""

    code = "store_error"
