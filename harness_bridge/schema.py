"""The wire model's published JSON Schemas (`docs/schema/`, `c2a schema`): one per message a
harness reads or answers, in validation mode with the wire's names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from harness_bridge.wire import (
    CancelledParams,
    CompactDeliverParams,
    DeliverParams,
    InitializeParams,
    InitializeResult,
    ProgressParams,
    TypingParams,
    WireModel,
)

__all__ = ["json_schemas", "write_json_schemas"]
_SCHEMA_MODELS: Final[tuple[type[WireModel], ...]] = (
    InitializeParams,
    InitializeResult,
    DeliverParams,
    CompactDeliverParams,
    CancelledParams,
    ProgressParams,
    TypingParams,
)


def json_schemas() -> dict[str, dict[str, Any]]:
    """Model name -> JSON Schema (validation mode, wire names) for the published messages."""
    return {model.__name__: model.model_json_schema(by_alias=True) for model in _SCHEMA_MODELS}


def write_json_schemas(directory: Path) -> list[Path]:
    """Write `<name>.schema.json` for each schema into `directory` (created if missing).

    Output is deterministic (sorted keys, indent 2, trailing newline); returns the paths written.
    """
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for name, schema in json_schemas().items():
        path = directory / f"{name}.schema.json"
        path.write_text(
            json.dumps(schema, indent=2, sort_keys=True, ensure_ascii=False) + "\n",
            encoding="utf-8",
        )
        written.append(path)
    return written
