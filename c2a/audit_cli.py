"""`c2a audit`: what a workspace's agents did, and the input it could not read, for people.

It reads the store `c2a run` writes for the manifest (the manifest's `store:`, else
`$C2A_DATABASE_URL`, else SQLite in the data directory), alongside a running `c2a run` or
without one, and adds or changes no record: the newest records, oldest first, one line each.
It opens the store as `c2a run` does (a ledger of an older version is migrated; on PostgreSQL a
workspace that never ran gets its empty tables); a missing SQLite file is refused instead.

An audit line is its time, agent, what (`send`, `approval`, `command`, ...), outcome and
detail (`key=value`, a value as JSON when it is not a plain word); with `--quarantine` a line
is the time, source and reason of input kept in quarantine (its payload stays in the store).
`--json` writes each record as a JSON object instead.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
from dataclasses import asdict
from typing import Any, TextIO

import orjson

from c2a.cli_args import add_manifest
from c2a.ledger_choice import add_data_dir, ledger_of
from core.store import Store
from core.store_records import AuditRecord, QuarantineRecord

__all__ = ["audit_line", "register"]

_PLAIN = re.compile(r"^[\w.:@/+-]{1,200}$")
# What JSON leaves as it is but a terminal acts on or hides: C1 controls, zero-width and
# direction marks, line and paragraph separators (JSON escapes the C0 controls itself).
_UNSEEN = re.compile("[\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")


def register(subcommands: Any) -> None:
    """Add `c2a audit` to the command line."""
    audit = subcommands.add_parser(
        "audit", help="print what the agents did (the audit log), or the input kept in quarantine"
    )
    add_manifest(audit, "workspace manifest (YAML), as `c2a run` is given it")
    add_data_dir(audit)
    audit.add_argument("--agent", help="only this agent's records")
    audit.add_argument(
        "--limit", type=_positive, default=50, help="how many of the newest records (50)"
    )
    audit.add_argument(
        "--quarantine", action="store_true", help="the input that could not be read instead"
    )
    audit.add_argument("--json", action="store_true", help="one JSON object a line")
    audit.set_defaults(run=_audit)


def _positive(value: str) -> int:
    if not value.isdecimal() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"{value!r} is not a whole number of at least 1")
    return int(value)


def _audit(args: argparse.Namespace) -> int:
    records = asyncio.run(_read(ledger_of(args.manifest, args.data_dir).store, args))
    _write(records, args.json, sys.stdout)
    return 0


async def _read(
    store: Store, args: argparse.Namespace
) -> list[AuditRecord] | list[QuarantineRecord]:
    await store.open()
    try:
        if args.quarantine:
            return await store.quarantined(args.limit)
        return await store.audit_records(args.limit, args.agent)
    finally:
        await store.close()


def _write(records: list[AuditRecord] | list[QuarantineRecord], as_json: bool, out: TextIO) -> None:
    for record in records:
        if as_json:
            out.write(_json(asdict(record)) + "\n")
        elif isinstance(record, AuditRecord):
            out.write(audit_line(record) + "\n")
        else:
            out.write(_quarantine_line(record) + "\n")


def _quarantine_line(record: QuarantineRecord) -> str:
    """One quarantined input as a line: when it first came, its source and why; how many times
    it came and when it last did, when more than once."""
    again = f"  ({record.times} times, last {record.last_at})" if record.times > 1 else ""
    return f"{record.at}  {record.source}  {_one_line(record.reason)}{again}"


def audit_line(record: AuditRecord) -> str:
    """One audit record as a line: time, agent, what, outcome, then its detail as `key=value`
    (a value as JSON unless it is a plain word, so no value can break the line)."""
    detail = " ".join(f"{key}={_value(value)}" for key, value in record.detail.items())
    return f"{record.at}  {record.agent}  {record.what}  {record.outcome}  {detail}".rstrip()


def _value(value: object) -> str:
    return value if isinstance(value, str) and _PLAIN.match(value) else _json(value)


def _one_line(text: str) -> str:
    return text if _PLAIN.match(text) else _json(text)[1:-1]


def _json(value: object) -> str:
    """`value` as JSON that shows the same in any terminal: every character a terminal would act
    on or hide written as its `\\u` escape."""
    text = orjson.dumps(value).decode()
    return _UNSEEN.sub(lambda found: f"\\u{ord(found.group()):04x}", text)
