"""Files a bot uploads to the fake Discord: a multipart message's `payload_json` read with its
`files[n]` parts, each kept (`Upload`) and shown on the message as an attachment, as Discord
shows it (an id, the file name, its size and a CDN URL)."""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from typing import Any

from aiohttp import web

__all__ = ["Upload", "Uploads"]


@dataclass(frozen=True, slots=True)
class Upload:
    """One uploaded file: the API path it came with, its name and its bytes."""

    path: str
    filename: str
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()


class Uploads:
    """Every file uploaded to the fake, in order (`received`)."""

    def __init__(self) -> None:
        self.received: list[Upload] = []
        self._ids = itertools.count(1)

    async def read(self, request: web.Request, path: str, base: str) -> dict[str, Any]:
        """The request's JSON payload, its `attachments` the files it carried as Discord
        shows them on the message."""
        form = await request.post()
        payload: dict[str, Any] = json.loads(str(form["payload_json"]))
        shown = []
        for name, part in form.items():
            if not name.startswith("files[") or isinstance(part, str):
                continue
            body = part.file.read()
            self.received.append(Upload(path, part.filename, body))
            attachment_id = f"9{next(self._ids):018d}"
            url = f"{base}/attachments/{path.split('/')[2]}/{attachment_id}/{part.filename}"
            shown.append(
                {
                    "id": attachment_id,
                    "filename": part.filename,
                    "size": len(body),
                    "url": url,
                    "proxy_url": url,
                    "content_type": part.content_type,
                }
            )
        return payload | {"attachments": shown}
