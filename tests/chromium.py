"""Debian's headless Chromium driven through its ChromeDriver by selenium, for the tests that
open the web chat in a real browser: the driver (the `browser` fixture) and a bounded wait."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

__all__ = ["WAIT", "browser_fixture", "wait"]

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
WAIT = 30.0
_T = TypeVar("_T")


@pytest.fixture(name="browser")
def browser_fixture(tmp_path: Path) -> Iterator[WebDriver]:
    """Headless Chromium with its own profile; the browser's console is kept in its log."""
    for needed in (CHROMIUM, CHROMEDRIVER):
        assert needed.exists(), f"{needed} is missing: apt-get install chromium chromium-driver"
    options = Options()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
        f"--user-data-dir={tmp_path / 'profile'}",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait(driver: WebDriver, what: str, test: Callable[[WebDriver], _T]) -> _T:
    """What `test` returns once it is truthy, polled for up to `WAIT` seconds."""
    try:
        return WebDriverWait(driver, WAIT, poll_frequency=0.1).until(test)
    except Exception as exc:
        raise AssertionError(f"timed out waiting for {what}") from exc
