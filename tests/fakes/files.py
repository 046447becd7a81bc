"""Files a fake platform serves to bots (Slack's `url_private`, Discord's attachment CDN), and
the `Authorization` header of every request for one, for tests to assert on."""

from __future__ import annotations

from dataclasses import dataclass

from aiohttp import web

__all__ = ["FileRequest", "FileShelf"]


@dataclass(frozen=True, slots=True)
class FileRequest:
    """One request for a file: its path and the `Authorization` it came with (None: none)."""

    path: str
    authorization: str | None


class FileShelf:
    """Files by path; `token`, when set, is the `Authorization` a request must carry (else 403),
    as Slack requires of `url_private`."""

    def __init__(self, *, token_required: bool = False) -> None:
        self.files: dict[str, tuple[bytes, str]] = {}
        self.requests: list[FileRequest] = []
        self.token_required = token_required

    def put(self, path: str, body: bytes, content_type: str = "application/octet-stream") -> None:
        """Serve `body` at `path` (it starts with the shelf's prefix) as `content_type`."""
        self.files[path] = (body, content_type)

    def serve(self, app: web.Application, prefix: str) -> None:
        """Answer GET `prefix/...` on `app` from the shelf."""
        app.router.add_get(prefix + "/{tail:.*}", self._get)

    async def _get(self, request: web.Request) -> web.Response:
        authorization = request.headers.get("Authorization")
        self.requests.append(FileRequest(request.path, authorization))
        if self.token_required and not (authorization or "").startswith("Bearer xoxb-"):
            return web.Response(status=403, text="not allowed")
        found = self.files.get(request.path)
        if found is None:
            return web.Response(status=404, text="file not found")
        return web.Response(body=found[0], content_type=found[1])
