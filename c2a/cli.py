"""The `c2a` command: `check` a manifest, `replay` a trace, `run` workspaces live, export the
wire `schema`; `init`, `audit`, `prune`, `slack` and `discord` are in modules of their own."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TextIO

from c2a import audit_cli, discord_cli, init_cli, prune_cli, slack_cli
from c2a.cli_args import add_manifest
from c2a.ledger_lock import LedgerLock
from c2a.logs import configure_logging
from c2a.platforms import load_workspace
from c2a.pretty import render_pretty
from c2a.replay import replay
from c2a.run import run_workspaces
from core.errors import C2AError
from core.sqlite_store import SQLiteStore
from harness_bridge.backends.registry import available
from harness_bridge.schema import write_json_schemas
from harness_bridge.wire import COMPACT_VIEW, FULL_ENVELOPE

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 ok, 1 some input rejected, 2 unusable)."""
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        status: int = args.run(args)
    except C2AError as exc:
        print(f"c2a: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return status


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="c2a",
        description="Connects Slack and Discord to local LLM agents, deciding per agent "
        "what is for it.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    check = commands.add_parser("check", help="validate a workspace manifest and say what it means")
    add_manifest(check)
    check.set_defaults(run=_check)

    rep = commands.add_parser(
        "replay", help="run recorded platform payloads through the engine, offline"
    )
    rep.add_argument("trace", help="JSON Lines trace: {at, platform, payload, via?} per line")
    rep.add_argument("--manifest", "-m", required=True, help="workspace manifest (YAML)")
    rep.add_argument("--out", "-o", help="write JSON Lines here instead of standard output")
    rep.add_argument(
        "--store", help="ledger file (SQLite); default: an in-memory ledger for this run only"
    )
    rep.add_argument(
        "--protocol-version",
        choices=[FULL_ENVELOPE, COMPACT_VIEW],
        default=FULL_ENVELOPE,
        help="the version the harness negotiated (2026-06-24 adds the compact fields)",
    )
    rep.add_argument("--pretty", action="store_true", help="one readable line per decision")
    rep.add_argument(
        "--stats", action="store_true", help="print counts and events per second to stderr"
    )
    rep.set_defaults(run=_replay)

    live = commands.add_parser(
        "run",
        help="run workspaces live: platform connections, ledger, harnesses, outbox "
        "(SIGHUP: read the manifests again)",
    )
    live.add_argument(
        "manifests",
        nargs="*",
        metavar="MANIFEST",
        help="workspace manifest (YAML); several run several workspaces in one process",
    )
    live.add_argument(
        "--manifest",
        "-m",
        action="append",
        default=[],
        help="a workspace manifest, as MANIFEST; may be repeated",
    )
    live.add_argument(
        "--data-dir", default=".c2a", help="where the ledgers live, one per workspace (.c2a)"
    )
    live.add_argument(
        "--log-format", choices=["text", "json"], default="text", help="log lines as text or JSON"
    )
    live.add_argument(
        "--metrics-port",
        type=int,
        help="serve /healthz and Prometheus /metrics on 127.0.0.1 at this port (0: any free)",
    )
    live.add_argument(
        "--webchat-port",
        type=int,
        help="serve the web chat at this port instead of the manifest's (0: any free)",
    )
    live.set_defaults(run=_run)

    slack_cli.register(commands)
    discord_cli.register(commands)
    init_cli.register(commands)
    audit_cli.register(commands)
    prune_cli.register(commands)

    schema = commands.add_parser("schema", help="write the wire model's JSON Schemas")
    schema.add_argument("--out", default="docs/schema", help="directory (default docs/schema)")
    schema.set_defaults(run=_schema)
    return parser


def _check(args: argparse.Namespace) -> int:
    workspace = load_workspace(args.manifest, backends=available())
    for line in workspace.describe():
        print(line)
    print("ok")
    return 0


def _replay(args: argparse.Namespace) -> int:
    workspace = load_workspace(args.manifest)
    store = SQLiteStore(args.store or ":memory:")
    trace = Path(args.trace)
    if not trace.is_file():
        print(f"c2a: trace {trace} does not exist", file=sys.stderr)
        return 2
    lock = LedgerLock(args.store) if args.store else None  # never into a live run's ledger
    if lock is not None:
        lock.take()
    # Read as bytes: the replay decodes each line on its own, so one that is not UTF-8 is
    # reported instead of ending the read.
    with _output(args.out) as out, trace.open("rb") as lines:
        stats = asyncio.run(
            replay(
                workspace,
                lines,
                store,
                out,
                sys.stderr,
                source=str(trace),
                compact=args.protocol_version == COMPACT_VIEW,
                render=render_pretty if args.pretty else None,
            )
        )
    if lock is not None:
        lock.release()
    if args.stats:
        print(json.dumps(stats.as_dict()), file=sys.stderr)
    return 1 if stats.errors else 0


def _run(args: argparse.Namespace) -> int:
    manifests = [*args.manifest, *args.manifests]
    if not manifests:
        print("c2a run: name a workspace manifest: c2a run workspace.yaml", file=sys.stderr)
        return 2
    configure_logging(args.log_format)

    async def main() -> None:
        stop, reload = asyncio.Event(), asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        loop.add_signal_handler(signal.SIGHUP, reload.set)  # read the manifests again
        await run_workspaces(
            manifests,
            stop=stop,
            data_dir=args.data_dir,
            metrics_port=args.metrics_port,
            webchat_port=args.webchat_port,
            reload=reload,
        )

    asyncio.run(main())
    return 0


def _schema(args: argparse.Namespace) -> int:
    for path in write_json_schemas(Path(args.out)):
        print(path)
    return 0


@contextlib.contextmanager
def _output(path: str | None) -> Iterator[TextIO]:
    if path is None:
        yield sys.stdout
        return
    with open(path, "w", encoding="utf-8") as handle:
        yield handle


if __name__ == "__main__":
    raise SystemExit(main())
