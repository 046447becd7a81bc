"""Who may use the web chat: only its own page, with the run's token, on this server's name.

The checks are read alone first; then the live server (real aiohttp on 127.0.0.1, a real
aiohttp client) is asked as another page, a DNS-rebinding page and a script without the token
would ask it, and as the person who opened the printed URL.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from builders import local_workspace
from live_webchat import Chat, run

from adapters.webchat.access import (
    TOKEN_ENV,
    Access,
    RequestHost,
    is_loopback,
    token_from,
)
from adapters.webchat.manifest import WebchatWorkspace
from core.errors import AccessRefused, ManifestError

TOKEN = "t" * 43
PAGE = {"port": 8765, "channels": ["general", "ops"], "humans": ["ana", "ben"]}
SECURITY_HEADERS = {
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Resource-Policy": "same-origin",
}


# ---- the checks --------------------------------------------------------------------------------


def test_the_host_must_be_a_loopback_name() -> None:
    access = Access(TOKEN, WebchatWorkspace())
    assert access.host("127.0.0.1:8765") == RequestHost("127.0.0.1", 8765)
    assert access.host("LocalHost:8765") == RequestHost("localhost", 8765)
    assert str(access.host("[::1]:8765")) == "[::1]:8765"
    assert str(access.host("localhost")) == "localhost"
    for hostile in ("evil.example:8765", "127.0.0.1.evil.example", "192.168.1.5:8765"):
        with pytest.raises(AccessRefused, match="is not this server"):
            access.host(hostile)
    for malformed in (None, "", ":8765", "[::1", "127.0.0.1:99999", "127.0.0.1:80a", "a b"):
        with pytest.raises(AccessRefused, match="is not a host name"):
            access.host(malformed)


def test_the_configured_host_counts_and_a_wildcard_bind_takes_addresses_not_names() -> None:
    named = Access(TOKEN, WebchatWorkspace(host="chat.lan"))
    assert named.host("chat.lan:8765").name == "chat.lan"
    everywhere = Access(TOKEN, WebchatWorkspace(host="0.0.0.0"))
    assert everywhere.host("192.168.1.5:8765").name == "192.168.1.5"
    assert everywhere.host("[fe80::1]:8765").name == "fe80::1"
    with pytest.raises(AccessRefused):
        everywhere.host("evil.example:8765")


def test_a_token_and_an_origin_are_checked() -> None:
    access = Access(TOKEN, WebchatWorkspace(allowed_origins=["https://tools.example"]))
    access.admit(None, TOKEN)
    access.admit(TOKEN, "stale")
    for offered in ((), (None, None), ("t" * 42,), ("", "ǩ" * 43)):
        with pytest.raises(AccessRefused, match="no valid token"):
            access.admit(*offered)
    host = RequestHost("127.0.0.1", 8765)
    access.origin(None, "http", host)  # a script, not a page
    access.origin("http://127.0.0.1:8765", "http", host)
    access.origin("https://tools.example", "http", host)
    for foreign in (
        "http://evil.example",
        "null",
        "http://127.0.0.1:9999",
        "http://localhost:8765",
    ):
        with pytest.raises(AccessRefused, match="Origin"):
            access.origin(foreign, "http", host)


def test_the_token_is_new_each_run_unless_fixed_by_the_environment() -> None:
    assert token_from({}) != token_from({})
    assert len(token_from({})) >= 43
    assert token_from({TOKEN_ENV: TOKEN}) == TOKEN
    for weak in ("", "short", "x" * 31, "t" * 40 + " ;="):
        with pytest.raises(ManifestError, match=TOKEN_ENV):
            token_from({TOKEN_ENV: weak})


def test_only_loopback_addresses_stay_on_this_machine() -> None:
    for host in ("127.0.0.1", "127.0.0.2", "localhost", "::1", "[::1]"):
        assert is_loopback(host), host
    for host in ("0.0.0.0", "::", "192.168.1.5", "chat.lan"):
        assert not is_loopback(host), host


def test_allowed_origins_are_origins_kept_as_browsers_send_them() -> None:
    page = {**PAGE, "allowed_origins": ["HTTPS://Tools.Example:443/", "http://[::1]:9000"]}
    config = local_workspace(webchat=page).manifest.webchat
    assert config is not None
    assert config.allowed_origins == ["https://tools.example", "http://[::1]:9000"]
    for wrong in ("https://tools.example/chat", "tools.example", "ftp://x", "http://u@x"):
        with pytest.raises(ManifestError, match=r"webchat\.allowed_origins: .* is not an origin"):
            local_workspace(webchat={**PAGE, "allowed_origins": [wrong]})


# ---- the live server ----------------------------------------------------------------------------


async def handshake(url: str, **options: Any) -> int:
    """The status a websocket handshake gets: 101 when it opens."""
    async with aiohttp.ClientSession() as http:
        try:
            async with http.ws_connect(url, **options) as socket:
                await socket.receive_json()
                return 101
        except aiohttp.WSServerHandshakeError as refused:
            return refused.status


def test_a_websocket_from_another_origin_is_refused(tmp_path: Path) -> None:
    async def scenario(chat: Chat) -> None:
        ws = chat.chat.link("/ws")
        assert await handshake(ws, origin="http://evil.example") == 403
        assert await handshake(ws, origin="null") == 403
        other_port = chat.chat.origin.rsplit(":", 1)[0] + ":1"
        assert await handshake(ws, origin=other_port) == 403
        assert await handshake(ws, origin=chat.chat.origin) == 101

    run(tmp_path, scenario)


def test_a_websocket_or_page_without_the_token_is_refused(tmp_path: Path) -> None:
    async def scenario(chat: Chat) -> None:
        origin = chat.chat.origin
        assert await handshake(f"{origin}/ws", origin=origin) == 403
        assert await handshake(f"{origin}/ws?token=guess", origin=origin) == 403
        async with aiohttp.ClientSession() as http:
            for path in ("/", "/page.js", "/page.css", "/nowhere"):
                async with http.get(origin + path) as response:
                    assert response.status == 403, path
                    assert "open the URL that c2a run printed" in await response.text()

    run(tmp_path, scenario)


def test_a_request_naming_another_host_is_refused(tmp_path: Path) -> None:
    async def scenario(chat: Chat) -> None:
        port = chat.chat.port
        rebound = {"Host": f"evil.example:{port}"}
        async with (
            aiohttp.ClientSession() as http,
            http.get(chat.chat.url, headers=rebound) as response,
        ):
            assert response.status == 403
            assert "is not this server" in await response.text()
        ws = chat.chat.link("/ws")
        assert await handshake(ws, headers=rebound, origin=f"http://evil.example:{port}") == 403

    run(tmp_path, scenario)


def test_the_token_from_the_same_origin_posts_and_hears_back(tmp_path: Path) -> None:
    async def scenario(chat: Chat) -> None:
        # `running` opened the socket as the page does: the run's token, the page's origin.
        await chat.request("post", channel="general", text="hello from the page")
        shown = await chat.frame(lambda f: f["op"] == "message")
        assert shown["message"]["text"] == "hello from the page"
        assert shown["message"]["user"] == "ana"

    run(tmp_path, scenario)


def test_the_printed_url_leaves_a_strict_cookie_and_the_clean_page(tmp_path: Path) -> None:
    async def scenario(chat: Chat) -> None:
        jar = aiohttp.CookieJar(unsafe=True)  # a browser keeps cookies of 127.0.0.1 too
        async with aiohttp.ClientSession(cookie_jar=jar) as http:
            async with http.get(chat.chat.url, allow_redirects=False) as entered:
                assert entered.status == 303
                assert entered.headers["Location"] == "/"
                cookie = entered.cookies[f"c2a-webchat-{chat.chat.port}"]
                assert cookie.value == chat.chat.access.token
                assert cookie["httponly"] is True
                assert cookie["samesite"] == "Strict"
                assert cookie["path"] == "/"
            async with http.get(f"{chat.chat.origin}/") as page:
                assert page.status == 200
                assert "<title>c2a web chat</title>" in await page.text()
            async with http.get(f"{chat.chat.origin}/favicon.ico") as icon:
                assert icon.status == 200  # not a 404 in the console of every page
                assert icon.content_type == "image/svg+xml"
            origin = chat.chat.origin
            async with http.ws_connect(f"{origin}/ws", origin=origin) as socket:
                assert (await socket.receive_json())["op"] == "hello"

    run(tmp_path, scenario)


def test_every_response_carries_the_security_headers(tmp_path: Path) -> None:
    async def scenario(chat: Chat) -> None:
        host = chat.chat.origin.removeprefix("http://")
        async with aiohttp.ClientSession() as http:
            for path, status in (("/", 303), ("/page.js", 200), ("/nowhere", 404)):
                async with http.get(chat.chat.link(path), allow_redirects=False) as response:
                    assert response.status == status
                    assert response.headers.items() >= SECURITY_HEADERS.items()
                    policy = response.headers["Content-Security-Policy"]
                    assert "default-src 'self'" in policy
                    assert "frame-ancestors 'none'" in policy
                    assert f"connect-src 'self' ws://{host} wss://{host}" in policy
            async with http.get(chat.chat.origin + "/") as refused:
                assert refused.status == 403
                assert refused.headers.items() >= SECURITY_HEADERS.items()
                assert "default-src 'self'" in refused.headers["Content-Security-Policy"]

    run(tmp_path, scenario)


def test_an_allowed_origin_may_open_the_websocket(tmp_path: Path) -> None:
    page = {**PAGE, "allowed_origins": ["https://tools.example"]}

    async def scenario(chat: Chat) -> None:
        ws = chat.chat.link("/ws")
        assert await handshake(ws, origin="https://tools.example") == 101
        assert await handshake(ws, origin="https://tools.example:8443") == 403

    run(tmp_path, scenario, local_workspace(webchat=page))


def test_refusals_are_logged_without_flooding(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def scenario(chat: Chat) -> None:
        async with aiohttp.ClientSession() as http:
            for _ in range(3):
                async with http.get(chat.chat.origin + "/") as response:
                    assert response.status == 403

    with caplog.at_level(logging.WARNING, logger="adapters.webchat.access"):
        run(tmp_path, scenario)
    refused = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
    assert refused == [
        "web chat: refused GET '/': no valid token: open the URL that c2a run printed, "
        "with its ?token="
    ]
