"""Slack's external file upload on the fake Slack: `files.getUploadURLExternal` hands out an
upload URL on the fake, the upload POST stores the bytes there, and
`files.completeUploadExternal` shares the uploaded files as one message by the bot (its text
the `initial_comment`, its `files` the files) in the channel or thread, as slack-sdk's
`files_upload_v2` drives them."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from aiohttp import web

__all__ = ["SharedFile", "Uploads"]

JsonDict = dict[str, Any]


class _Bot(Protocol):
    user_id: str
    bot_id: str
    team_id: str


class _Store(Protocol):
    def __call__(
        self, channel: str, message: JsonDict, thread_ts: str | None, ts: str | None
    ) -> str: ...


@dataclass
class SharedFile:
    """A file an upload URL was asked for: its name and length as announced, the bytes the
    upload POST brought (None until then), and where completing shared it."""

    id: str
    name: str
    length: int
    body: bytes | None = None
    shared_in: list[tuple[str, str]] = field(default_factory=list)  # channel, ts

    @property
    def text(self) -> str:
        return (self.body or b"").decode()


class Uploads:
    """The upload methods and URL of one fake Slack. `base` gives the fake's URL once it
    listens; `store` keeps a message in a channel (the fake's own store)."""

    def __init__(self, base: Callable[[], str], store: _Store) -> None:
        self.base = base
        self.store = store
        self.files: dict[str, SharedFile] = {}
        self.posts: list[str] = []  # the file id of every upload POST, in order
        self._ids = itertools.count(1)

    def methods(self) -> dict[str, Callable[[JsonDict, Any], JsonDict]]:
        return {
            "files.getUploadURLExternal": self._get_upload_url,
            "files.completeUploadExternal": self._complete,
        }

    def serve(self, app: web.Application) -> None:
        app.router.add_post("/upload/{file_id}", self._upload)

    def shared(self) -> list[SharedFile]:
        """The files completing shared somewhere, in the order they were uploaded."""
        return [f for f in self.files.values() if f.shared_in]

    def _get_upload_url(self, params: JsonDict, bot: _Bot) -> JsonDict:
        name, length = params.get("filename"), params.get("length")
        if not name or length is None:
            return {"ok": False, "error": "invalid_arguments"}
        file_id = f"F0UP{next(self._ids):05d}"
        self.files[file_id] = SharedFile(file_id, str(name), int(length))
        return {"ok": True, "upload_url": f"{self.base()}/upload/{file_id}", "file_id": file_id}

    async def _upload(self, request: web.Request) -> web.Response:
        file = self.files.get(request.match_info["file_id"])
        if file is None:
            return web.Response(status=404, text="no such upload")
        file.body = await request.read()
        self.posts.append(file.id)
        return web.Response(text=f"OK - {len(file.body)}")

    def _complete(self, params: JsonDict, bot: _Bot) -> JsonDict:
        listed = params.get("files")
        wanted = json.loads(listed) if isinstance(listed, str) else listed or []
        files = [self.files.get(str(item.get("id"))) for item in wanted]
        if not files or any(f is None or f.body is None for f in files):
            return {"ok": False, "error": "file_not_found"}
        channel = params.get("channel_id")
        if not channel:
            return {"ok": False, "error": "invalid_arguments"}
        shown = [self._shown(f) for f in files if f is not None]
        message: JsonDict = {"type": "message", "user": bot.user_id, "bot_id": bot.bot_id}
        message |= {"text": params.get("initial_comment") or "", "files": shown, "upload": True}
        ts = self.store(str(channel), message, params.get("thread_ts") or None, None)
        for file in files:
            assert file is not None
            file.shared_in.append((str(channel), ts))
        share = {"public": {str(channel): [{"ts": ts, "channel_name": "general"}]}}
        return {"ok": True, "files": [s | {"shares": share} for s in shown]}

    @staticmethod
    def _shown(file: SharedFile | None) -> JsonDict:
        assert file is not None
        return {
            "id": file.id,
            "name": file.name,
            "title": file.name,
            "mimetype": "text/plain",
            "size": len(file.body or b""),
        }
