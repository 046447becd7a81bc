"""The web chat in real headless Chromium (Debian's `chromium` and `chromedriver`, driven by
selenium) against `c2a run` as a real process with the embedded default manifest
(`manifests/workspaces/local.yaml`, as `make run` starts it), its agents' model endpoint
(`C2A_MODEL_URL`) a fake that answers by rule (`fakes.attentive_model`).

One person, one channel: chatter nobody is asked about, a mention of the lead, a mention of a
role, and a mention deleted straight away. The page, opened at the URL `c2a run` printed (with
its token), must show the core's decisions beside each message and exactly the replies the
attention model allows, with nothing blocked by its Content-Security-Policy. A screenshot of
the end state is saved in `test-artifacts/` (or `$C2A_TEST_ARTIFACTS`). Then another page on
the same host, which the browser sends the token cookie with, tries to open the chat's
websocket and is refused.
"""

from __future__ import annotations

import asyncio
import http.server
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from builders import ROOT
from chromium import browser_fixture, wait  # noqa: F401 (the browser fixture)
from fakes.attentive_model import AttentiveModel
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver

EMBEDDED = ROOT / "manifests" / "workspaces" / "local.yaml"
ARTIFACTS = Path(os.environ.get("C2A_TEST_ARTIFACTS", ROOT / "test-artifacts"))


@pytest.fixture
def model() -> Iterator[AttentiveModel]:
    """The fake model, served from its own thread while the test drives the browser."""
    ready = threading.Event()
    holder: dict[str, Any] = {}

    def serve() -> None:
        async def main() -> None:
            async with AttentiveModel() as server:
                holder["server"], holder["stop"] = server, asyncio.Event()
                holder["loop"] = asyncio.get_running_loop()
                ready.set()
                await holder["stop"].wait()

        asyncio.run(main())

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10), "the fake model did not start"
    yield holder["server"]
    holder["loop"].call_soon_threadsafe(holder["stop"].set)
    thread.join(10)


@pytest.fixture
def c2a(tmp_path: Path, model: AttentiveModel) -> Iterator[str]:
    """`c2a run` on the local manifest; yields the web chat's URL, then stops it with SIGTERM."""
    env = {**os.environ, "C2A_MODEL_URL": model.base_url, "PYTHONUNBUFFERED": "1"}
    command = [
        sys.executable,
        "-m",
        "c2a.cli",
        "run",
        "--manifest",
        str(EMBEDDED),
    ]
    command += ["--data-dir", str(tmp_path / "data"), "--webchat-port", "0"]
    # The address to open is on standard output, the log on standard error: read both.
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
    )
    assert process.stdout is not None
    lines: list[str] = []
    found: dict[str, str] = {}
    ready = threading.Event()

    def read() -> None:
        assert process.stdout is not None
        for line in process.stdout:
            lines.append(line)
            match = re.search(r"web chat ready, open (http://\S+)", line)
            if match:
                found["url"] = match.group(1)
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        if not ready.wait(60):
            raise AssertionError("c2a run did not serve the web chat:\n" + "".join(lines))
        yield found["url"]
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(30)
        reader.join(5)
        process.stdout.close()
    log = "".join(lines)
    assert code == 0, log
    assert "Traceback" not in log, log


# ---- reading the page -------------------------------------------------------------------------


# The page redraws its list on every change, so it is read in one go, in the page itself.
_READ = """
return [...document.querySelectorAll('#messages li.msg')].map((li) => ({
  id: li.dataset.id, user: li.dataset.user, replyTo: li.dataset.replyTo,
  deleted: li.classList.contains('deleted'), text: li.querySelector('.body').textContent,
  chips: [...li.querySelectorAll('.chip')].map((c) => ({...c.dataset})),
}));
"""


def messages(driver: WebDriver) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = driver.execute_script(_READ)
    return found


def post(driver: WebDriver, text: str) -> str:
    """Type a message into the channel and send it; returns its id once it is shown."""
    driver.find_element(By.ID, "composer-text").send_keys(text, Keys.ENTER)

    def shown(d: WebDriver) -> str | None:
        mine = [m["id"] for m in messages(d) if m["user"] == "ana" and m["text"] == text]
        return mine[-1] if mine else None

    return wait(driver, f"{text!r} on the page", shown)


def chips(driver: WebDriver, message_id: str) -> dict[str, dict[str, str]]:
    for message in messages(driver):
        if message["id"] == message_id:
            return {chip["agent"]: chip for chip in message["chips"]}
    return {}


def repliers(driver: WebDriver, message_id: str) -> list[str]:
    return [m["user"] for m in messages(driver) if m["replyTo"] == message_id]


def deleted(driver: WebDriver, message_id: str) -> bool:
    return any(m["id"] == message_id and m["deleted"] for m in messages(driver))


def delete(driver: WebDriver, message_id: str) -> bool:
    """Hover over the message and press its Delete button, as a person would."""
    try:
        item = driver.find_element(By.CSS_SELECTOR, f"li.msg[data-id='{message_id}']")
        ActionChains(driver).move_to_element(item).perform()
        item.find_element(By.CSS_SELECTOR, "button[data-action='delete']").click()
    except StaleElementReferenceException:
        return False  # redrawn under the pointer: try again
    return True


# ---- the conversation -------------------------------------------------------------------------


def test_the_attention_model_at_work_in_a_real_browser(
    c2a: str, browser: WebDriver, model: AttentiveModel
) -> None:
    assert "?token=" in c2a
    browser.get(c2a)
    wait(browser, "the roster", lambda d: d.find_element(By.ID, "as").get_attribute("value"))
    assert browser.find_element(By.ID, "as").get_attribute("value") == "ana"
    assert browser.current_url == c2a.partition("?")[0]  # the token went into a cookie
    # Which model answers, as the agents' harnesses say: one line, the three agents share it.
    shown = wait(browser, "the model line", lambda d: d.find_element(By.ID, "models").text)
    where = f"the server at {model.base_url} (C2A_MODEL_URL)"
    assert shown == f"lead, worker-1, worker-2: default ({where})"

    chatter = post(browser, "lunch is at noon today")
    wait(browser, "decisions beside the chatter", lambda d: len(chips(d, chatter)) == 3)
    for chip in chips(browser, chatter).values():
        assert (chip["directedness"], chip["policy"], chip["mode"]) == (
            "ambient",
            "must_not_respond",
            "tool_mailbox",
        )

    asked = post(browser, "@lead can you check the deploy?")
    wait(browser, "the lead's reply", lambda d: repliers(d, asked) == ["lead"])
    lead = chips(browser, asked)["lead"]
    assert (lead["directedness"], lead["policy"]) == ("to_me", "must_respond")

    role = post(browser, "@backend can someone look at the flaky test?")
    wait(browser, "one worker's reply", lambda d: len(repliers(d, role)) == 1)
    held = wait(
        browser,
        "the claim shown",
        lambda d: [a for a, c in chips(d, role).items() if c["claim"] == "held"],
    )
    assert held == repliers(browser, role)

    gone = post(browser, "@lead please also restart the cache")
    wait(browser, "the Delete button pressed", lambda d: delete(d, gone))
    wait(browser, "the message shown deleted", lambda d: deleted(d, gone))
    time.sleep(4)  # well past the compose window: a reply, if any, would be here by now
    assert repliers(browser, gone) == []
    assert repliers(browser, chatter) == []
    assert repliers(browser, asked) == ["lead"]
    assert len(repliers(browser, role)) == 1

    # `/c2a` typed in the page is answered to this page alone, never posted.
    count = len(messages(browser))
    browser.find_element(By.ID, "composer-text").send_keys("/c2a status", Keys.ENTER)
    notice = wait(browser, "the /c2a answer", lambda d: d.find_element(By.ID, "notice-text").text)
    assert "lead" in notice and "worker-1" in notice
    assert len(messages(browser)) == count
    browser.find_element(By.ID, "notice").click()
    wait(
        browser, "the answer put away", lambda d: not d.find_element(By.ID, "notice").is_displayed()
    )

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    assert browser.save_screenshot(str(ARTIFACTS / "webchat.png"))
    blocked = [
        e["message"] for e in browser.get_log("browser") if "Security Policy" in e["message"]
    ]
    assert blocked == []


# ---- another page -----------------------------------------------------------------------------

# Opens the chat's websocket from elsewhere and says in its title what happened.
_HOSTILE = """<!doctype html><title>waiting</title><script>
const socket = new WebSocket("ws://%s/ws");
socket.onmessage = (m) => { document.title = "read " + m.data.slice(0, 12); };
socket.onclose = () => { if (document.title === "waiting") document.title = "refused"; };
</script>"""


@pytest.fixture
def elsewhere(c2a: str) -> Iterator[str]:
    """Another page on 127.0.0.1, at another port: the same site, so the browser sends it the
    chat's SameSite=Strict cookie; only the Origin check stands between them."""
    page = (_HOSTILE % urlsplit(c2a).netloc).encode()

    class Hostile(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Hostile)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_another_page_cannot_open_the_chat(c2a: str, elsewhere: str, browser: WebDriver) -> None:
    browser.get(c2a)  # the person opened the chat: its cookie is in this browser
    wait(browser, "the roster", lambda d: d.find_element(By.ID, "as").get_attribute("value"))
    browser.get(elsewhere)
    wait(browser, "the other page's attempt", lambda d: d.title != "waiting")
    assert browser.title == "refused"
