"""Who may use the web chat: the run's token, the Host and Origin checks, and the headers every
response carries.

The page has no accounts: whatever can speak for a person there makes agents act. So `guard`
lets a request through only when

- its `Host` names this server: a loopback name or the configured `webchat.host`. A page that
  reaches 127.0.0.1 through DNS rebinding still sends its own name. When bound to every
  address (`0.0.0.0`, `::`), an IP address is accepted too: rebinding always comes with a name;
- it carries the run's token, as `?token=` or in the cookie that the first visit with the
  token set (HttpOnly, SameSite=Strict), compared in constant time;
- and, if it has an `Origin` (browsers send one with every websocket handshake), that origin
  is this page's own or one of `webchat.allowed_origins`.

Anything else is answered 403 with the reason and never reaches the chat. The first visit to
`/?token=...` is redirected to the clean `/`, so the token does not stay in the address bar.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from aiohttp import hdrs, web
from aiohttp.typedefs import Handler, Middleware

from adapters.webchat.manifest import WebchatWorkspace
from core.errors import AccessRefused, ManifestError
from core.redact import new_token

__all__ = [
    "TOKEN_ENV",
    "Access",
    "RequestHost",
    "guard",
    "is_loopback",
    "secure_headers",
    "token_from",
    "url_host",
]

log = logging.getLogger(__name__)

TOKEN_ENV = "C2A_WEBCHAT_TOKEN"
LOOPBACK_NAMES: Final = frozenset({"localhost", "127.0.0.1", "::1"})
WILDCARDS: Final = frozenset({"0.0.0.0", "::"})
_TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{32,256}")
_PORT = re.compile(r"[0-9]{1,5}")
_SHOWN = 80  # characters of an untrusted header quoted in a refusal
REFUSALS_LOGGED_EVERY = 60.0  # seconds; a stale tab or a hostile page retries without end


def token_from(environ: Mapping[str, str]) -> str:
    """The run's token: `$C2A_WEBCHAT_TOKEN` when set (a fixed URL for scripts), else a new
    random one. Raises ManifestError when the variable is too short or not URL-safe."""
    fixed = environ.get(TOKEN_ENV)
    if fixed is None:
        return new_token()
    if not _TOKEN_SHAPE.fullmatch(fixed):
        raise ManifestError(
            f"{TOKEN_ENV} must be 32 to 256 characters of A-Z, a-z, 0-9, '-' and '_'; "
            "unset it for a new token each run, or make one with "
            "`python -c 'import secrets; print(\"c2a_\" + secrets.token_urlsafe(32))'`"
        )
    return fixed


def is_loopback(host: str) -> bool:
    """Whether a bind address or host name stays on this machine."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def url_host(name: str) -> str:
    """A host name as it is written in a URL: an IPv6 address in brackets."""
    return f"[{name}]" if ":" in name else name


@dataclass(frozen=True, slots=True)
class RequestHost:
    """A request's checked `Host`: the name it used for this server, and the port."""

    name: str
    port: int | None

    def __str__(self) -> str:
        return url_host(self.name) + (f":{self.port}" if self.port is not None else "")

    @property
    def cookie(self) -> str:
        """The token cookie's name: cookies are shared by every port of a host."""
        return f"c2a-webchat-{self.port if self.port is not None else 'default'}"


# Where a request's checked Host is kept for its response's headers.
_HOST: Final = web.RequestKey("webchat_host", RequestHost)


class Access:
    """The checks for one web chat: its token, the Host names it answers to, and the extra
    origins that may open its websocket."""

    def __init__(self, token: str, config: WebchatWorkspace) -> None:
        self.token = token
        self._token = token.encode()
        bind = config.host.strip("[]").lower()
        self._names = LOOPBACK_NAMES | {bind}
        self._any_address = bind in WILDCARDS
        self._origins = frozenset(config.allowed_origins)

    def host(self, header: str | None) -> RequestHost:
        """The request's `Host`, if it names this server; raises AccessRefused otherwise."""
        parsed = _split_host(header or "")
        if parsed is None:
            raise AccessRefused(f"Host {_shown(header)} is not a host name")
        name, port = parsed
        if name not in self._names and not (self._any_address and _is_address(name)):
            raise AccessRefused(
                f"Host {_shown(header)} is not this server (a loopback name or webchat.host)"
            )
        return RequestHost(name, port)

    def admit(self, *offered: str | None) -> None:
        """Passes when one of the offered tokens is the run's; raises AccessRefused otherwise."""
        if not any(
            hmac.compare_digest(given.encode(errors="replace"), self._token)
            for given in offered
            if given is not None
        ):
            raise AccessRefused(
                "no valid token: open the URL that c2a run printed, with its ?token="
            )

    def origin(self, origin: str | None, scheme: str, host: RequestHost) -> None:
        """Passes a request without an `Origin` (not sent by a page), from this page's own
        origin, or from an allowed one; raises AccessRefused otherwise."""
        if origin is None or origin == f"{scheme}://{host}" or origin in self._origins:
            return
        raise AccessRefused(
            f"Origin {_shown(origin)} is neither this page's nor in webchat.allowed_origins"
        )


def guard(access: Access) -> Middleware:
    """The middleware that lets only the web chat's own page through (see the module). A
    refusal is logged, then at most one line per `REFUSALS_LOGGED_EVERY` seconds."""
    quiet_until = 0.0
    unlogged = 0

    def note(request: web.Request, refusal: AccessRefused) -> None:
        nonlocal quiet_until, unlogged
        now = time.monotonic()
        if now < quiet_until:
            unlogged += 1
            return
        more = f" (and {unlogged} more refused since the last line)" if unlogged else ""
        log.warning(
            "web chat: refused %s %s: %s%s", request.method, _shown(request.path), refusal, more
        )
        quiet_until, unlogged = now + REFUSALS_LOGGED_EVERY, 0

    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        query = request.query.get("token")
        try:
            host = access.host(request.headers.get(hdrs.HOST))
            request[_HOST] = host
            access.admit(query, request.cookies.get(host.cookie))
            access.origin(request.headers.get(hdrs.ORIGIN), request.scheme, host)
        except AccessRefused as exc:
            note(request, exc)
            raise web.HTTPForbidden(text=f"c2a web chat: {exc}\n") from None
        if query is not None and request.method == hdrs.METH_GET and request.path == "/":
            entered = web.Response(status=303, headers={hdrs.LOCATION: "/"})
            entered.set_cookie(
                host.cookie, access.token, path="/", httponly=True, samesite="Strict"
            )
            return entered
        return await handler(request)

    return middleware


async def secure_headers(request: web.Request, response: web.StreamResponse) -> None:
    """Every response, refusals included: no framing, no sniffing, no referrer, no other
    origin's window or embedding, and a page that may only talk to its own server."""
    host = request.get(_HOST)
    sockets = f" ws://{host} wss://{host}" if host is not None else ""
    response.headers.update(
        {
            "Content-Security-Policy": (
                f"default-src 'self'; connect-src 'self'{sockets}; frame-ancestors 'none'; "
                "base-uri 'none'; form-action 'self'; object-src 'none'"
            ),
            "X-Frame-Options": "DENY",
            "X-Content-Type-Options": "nosniff",
            "Referrer-Policy": "no-referrer",
            "Cross-Origin-Opener-Policy": "same-origin",
            "Cross-Origin-Resource-Policy": "same-origin",
        }
    )


def _split_host(header: str) -> tuple[str, int | None] | None:
    """`name[:port]` or `[v6]:port` as (lowercase name, port); None when malformed."""
    if header.startswith("["):
        name, bracket, rest = header[1:].partition("]")
        if not bracket:
            return None
    else:
        name, colon, port_text = header.partition(":")
        rest = colon + port_text
    if rest and not (rest[0] == ":" and _PORT.fullmatch(rest[1:]) and int(rest[1:]) <= 65535):
        return None
    if not name or any(c.isspace() for c in name):
        return None
    return name.lower(), int(rest[1:]) if rest else None


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _shown(text: str | None) -> str:
    """An untrusted header value, quoted and cut short, for a refusal's message."""
    return repr(text if text is None or len(text) <= _SHOWN else text[:_SHOWN] + "…")
