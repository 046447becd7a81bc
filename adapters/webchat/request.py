"""One request a browser sends the web chat over its websocket, read defensively: a JSON
object whose fields are checked as they are read, each problem a `ValueError` whose text the
page is shown."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["BrowserRequest"]


class BrowserRequest:
    """One browser request (`{"op": ..., "as": ..., ...}`); raises `ValueError` when it is not
    a JSON object."""

    def __init__(self, raw: str) -> None:
        try:
            body = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc}") from None
        if not isinstance(body, dict):
            raise ValueError("a request is a JSON object")
        self.body: dict[str, Any] = body

    def text(self, key: str) -> str:
        """A non-empty string field; raises `ValueError` naming it otherwise."""
        value = self.body.get(key)
        if not isinstance(value, str) or not value:
            raise ValueError(f"{key} must be a non-empty string")
        return value

    def optional(self, key: str) -> str | None:
        """A string field that may be absent or null; raises `ValueError` naming it otherwise."""
        value = self.body.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            raise ValueError(f"{key} must be a string or null")
        return value
