"""The web chat as a registered platform: its normaliser, its reactions and its live side.

`connect` serves the page when the manifest has a `webchat:` section. Options it reads from
the run: `webchat_port` (overrides the manifest's port) and `models` (what the page shows of
each agent's model). The page's record is `<data_dir>/<workspace>.webchat.jsonl`, which the
workspace's retention prunes with the ledger (`forget`).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import datetime
from pathlib import Path

from adapters.webchat.access import is_loopback, token_from
from adapters.webchat.history import History
from adapters.webchat.manifest import SECTION, WebchatWorkspace
from adapters.webchat.normalise import normalise
from adapters.webchat.send import WebchatSender
from adapters.webchat.server import WebChat
from core.command_answers import Commands
from core.errors import ManifestError
from core.markup import CHAT_MARKUP
from core.outbox import Sender
from core.platform import Platform, RunContext
from core.signals import unicode_reactions

__all__ = ["PLATFORM", "WebchatConnection"]

log = logging.getLogger("c2a.run")


class WebchatConnection:
    """The page of one workspace and the sender that shows agents' actions on it."""

    def __init__(self, ctx: RunContext) -> None:
        name = ctx.workspace.manifest.workspace
        self.name = name
        self.chat = WebChat(
            ctx.workspace,
            ctx.receive,
            ctx.store,
            ctx.clock,
            history=history_file(ctx.data_dir, name),
            port=ctx.options.get("webchat_port"),
            token=token_from(ctx.environ),
            redactor=ctx.redactor,
            models=ctx.options.get("models"),
            approvals=ctx.engine.approvals,
            commands=Commands(ctx.engine, ctx.sink),
        )
        self._sender = WebchatSender(self.chat, ctx.workspace.glyphs)

    @property
    def sender(self) -> Sender:
        return self._sender

    async def start(self) -> None:
        """Listen; ManifestError, saying what to do, when the port is taken."""
        try:
            await self.chat.start()
        except OSError as exc:
            where = f"{self.chat.config.host}:{self.chat.port}"
            raise ManifestError(
                f"{self.name}: the web chat cannot listen on {where} ({exc.strerror}); "
                "stop what uses that port, or pick another: webchat.port in the manifest, or "
                "`c2a run --webchat-port 0` for any free one"
            ) from None
        log.info(
            "%s: web chat ready at %s/ (open the URL printed with its token)",
            self.name,
            self.chat.origin,
        )
        if not is_loopback(self.chat.config.host):
            log.warning(
                "%s: the web chat listens on %s, not only on this machine: whoever can "
                "reach it and learns the token reads every conversation and speaks for "
                "anyone in it, and plain HTTP carries the token unencrypted; set "
                "webchat.host to 127.0.0.1 unless that is meant",
                self.name,
                self.chat.config.host,
            )

    def ready(self) -> str:
        """The page's URL with its token: a secret, so the logs (redacted) cannot carry it."""
        return f"web chat ready, open {self.chat.url}"

    async def close(self) -> None:
        await self.chat.close()

    async def finish(self) -> None:
        return None

    async def forget(self, before: datetime) -> int:
        """`core.platform.KeepsRecord`: the page's record, and the open pages, drop what
        retention outlived."""
        return await self.chat.forget(before)


def history_file(data_dir: Path, workspace: str) -> Path:
    """Where the web chat of `workspace` keeps what was said."""
    return data_dir / f"{workspace}.webchat.jsonl"


def forget(data_dir: Path, workspace: str, before: datetime, *, dry_run: bool = False) -> int:
    """`KeepsRecord.forget` for a workspace whose run is stopped (`c2a prune`); with `dry_run`,
    how many messages it would drop."""
    history = History(history_file(data_dir, workspace))
    history.load()
    return len(history.outlived(before) if dry_run else history.forget(before))


def connect(ctx: RunContext) -> WebchatConnection | None:
    """The web chat of a workspace whose manifest has a `webchat:` section."""
    return WebchatConnection(ctx) if WebchatWorkspace.of(ctx.workspace.manifest) else None


PLATFORM = Platform(
    name="webchat",
    normalise=normalise,
    reactions=unicode_reactions(overrides_from="discord"),
    manifest=SECTION,
    markup=replace(CHAT_MARKUP, bold=""),  # the page shows text as typed: no bold marks
    connect=connect,
    streams_drafts=True,
    forget=forget,
)
