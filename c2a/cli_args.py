"""The workspace manifest a command reads, as its commands name it: a first word
(`c2a slack verify team.yaml`, as `c2a run team.yaml` and `c2a check team.yaml` take it) or
`--manifest team.yaml`, either one, never both; the command reads it in `args.manifest`."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

__all__ = ["add_manifest"]


def add_manifest(
    parser: argparse.ArgumentParser,
    says: str = "workspace manifest (YAML)",
    *,
    required: bool = True,
) -> None:
    """Let `parser` take the manifest as its first word or as `--manifest`/`-m`."""
    either = parser.add_mutually_exclusive_group(required=required)
    either.add_argument("manifest", nargs="?", metavar="MANIFEST", action=_Given, help=says)
    either.add_argument("--manifest", "-m", metavar="MANIFEST", help="the same, named")


class _Given(argparse.Action):
    """A first word that may be absent: absent, it leaves what `--manifest` set."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        if values is not None:
            setattr(namespace, self.dest, values)
