"""Files on an agent's Slack message: shared with slack-sdk's `files_upload_v2`, and recognised
in a conversation's history when a crash or a lost answer leaves unknown whether they landed.

`files_upload_v2` is three steps: `files.getUploadURLExternal` per file, the upload POST of its
bytes, and `files.completeUploadExternal`, which shares every file at once in the channel (and
thread) with the message text as its `initial_comment`. Only that last step makes anything
visible; a failure before it leaves at most an unshared file nobody sees, so it is simply
tried again. Slack gives the upload no idempotency key and its file messages carry no message
metadata, so an upload whose completion may have landed (a timeout, a 5xx from it) is an
unknown outcome, and `is_shared` recognises it in the history: a message by the agent's bot
whose text is the comment and whose files have the same names, in order. A message the same
bot posted with the same words and the same files in the same place is the same message, the
way the agent port derives its keys from the words and the place.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

import aiohttp
from slack_sdk.errors import SlackApiError, SlackRequestError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.render import Placement
from adapters.slack.webapi import api_error
from core.errors import PermanentSendError, SendOutcomeUnknown, TransientSendError
from core.post_files import PostFile

__all__ = ["COMPLETE", "is_shared", "share_files"]

COMPLETE: Final = "files.completeUploadExternal"
_SERVER_ERRORS: Final = frozenset({"internal_error", "fatal_error", "service_unavailable"})


async def share_files(
    client: AsyncWebClient | None,
    agent: str,
    where: Placement,
    files: Sequence[PostFile],
    comment: str,
) -> dict[str, Any]:
    """Upload `files` and share them where `where` says with `comment`; returns the posted
    message's `ts` (when Slack says it) and the files' ids. Raises TransientSendError when
    nothing was shared, SendOutcomeUnknown when it may have been, PermanentSendError when
    Slack refuses."""
    if client is None:
        raise PermanentSendError(f"slack: agent {agent!r} has no Slack bot token configured")
    uploads = [
        {"content": f.content, "filename": f.name, "title": f.name, "snippet_type": "text"}
        for f in files
    ]
    try:
        done = await client.files_upload_v2(
            file_uploads=uploads,
            channel=where.channel,
            thread_ts=where.thread_ts,
            initial_comment=comment,
        )
    except Exception as exc:
        raise _failure(agent, where.channel, exc) from exc
    shared = [dict(f) for f in done.get("files") or []]
    return {"ts": _share_ts(shared, where.channel), "fileIds": [str(f["id"]) for f in shared]}


def is_shared(message: Mapping[str, Any], comment: str, files: Sequence[PostFile]) -> bool:
    """Whether a message (the agent's own, from the history) is these files shared with this
    comment."""
    names = [str(f.get("name")) for f in message.get("files") or [] if isinstance(f, Mapping)]
    return message.get("text") == comment and names == [f.name for f in files]


def _share_ts(files: Sequence[Mapping[str, Any]], channel: str) -> str | None:
    """The ts of the message the files were shared in, when Slack already says it (its
    `shares` may come later)."""
    for file in files:
        shares = file.get("shares") or {}
        for kind in ("public", "private"):
            found = (shares.get(kind) or {}).get(channel) or []
            if found:
                return str(found[0]["ts"])
    return None


def _failure(agent: str, channel: str, exc: Exception) -> Exception:
    """A failure of `files_upload_v2` as this project's: only a completion that may have
    happened is an unknown outcome."""
    where = f"slack {agent}: sharing files in {channel}"
    if isinstance(exc, SlackApiError):
        error = api_error(exc)
        completing = str(exc.response.api_url).endswith(COMPLETE)
        if exc.response.status_code == 429 or error == "ratelimited":
            return TransientSendError(f"{where}: rate limited", {"error": error})
        if exc.response.status_code >= 500 or error in _SERVER_ERRORS:
            if completing:
                return SendOutcomeUnknown(f"{where}: Slack failed ({error}); it may have posted")
            return TransientSendError(f"{where}: Slack failed ({error})", {"error": error})
        hint = "; the Slack app needs files:write" if error == "missing_scope" else ""
        return PermanentSendError(f"{where}: refused: {error}{hint}", {"error": error})
    if isinstance(exc, (SlackRequestError, aiohttp.ClientConnectorError)):
        return TransientSendError(f"{where}: nothing was shared ({type(exc).__name__})")
    return SendOutcomeUnknown(f"{where}: no answer ({type(exc).__name__}); it may have posted")
