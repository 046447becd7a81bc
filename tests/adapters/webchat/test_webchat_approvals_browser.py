"""An agent's question with buttons in real headless Chromium: the page the web chat serves
shows the fake ACP agent's permission request under its message; a click by someone who is not
an approver is refused on the page and decides nothing; the approver's click lets the tool run,
and the page redraws the message with who decided, its buttons gone."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from chromium import browser_fixture, wait  # noqa: F401 (the browser fixture)
from outbox_pump import pumped
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import Select
from test_webchat_approvals import YES, asking, lead_turn, permissions

# The lead's messages as the page draws them, with the buttons under each, read in one go.
_READ = """
return [...document.querySelectorAll('#messages li.msg')]
  .filter((li) => li.dataset.user === 'lead')
  .map((li) => ({
    text: li.querySelector('.body').textContent,
    buttons: [...li.querySelectorAll('.choices button')].map((b) => b.textContent),
  }));
"""


def lead_said(driver: WebDriver) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = driver.execute_script(_READ)
    return found


def click(driver: WebDriver, person: str, label: str) -> None:
    """Choose who you are in the page, then click the button `label` under the question."""
    Select(driver.find_element(By.ID, "as")).select_by_value(person)
    xpath = f"//li[@data-user='lead']//div[@class='choices']/button[text()='{label}']"
    wait(driver, f"the {label!r} button", lambda d: d.find_element(By.XPATH, xpath)).click()


def status(driver: WebDriver) -> str:
    return str(driver.find_element(By.ID, "status").text)


def test_in_the_browser_a_non_approver_s_click_is_refused_and_an_approver_s_decides(
    tmp_path: Path, browser: WebDriver
) -> None:
    async def main() -> None:
        async with asking(tmp_path) as (chat, loop, outbox):
            await asyncio.to_thread(browser.get, chat.chat.url)
            said = await chat.chat.say("ana", "general", "@lead please run the tests")
            turn = asyncio.create_task(loop.run(await lead_turn(chat, said.id)))

            def asked(driver: WebDriver) -> list[dict[str, Any]]:
                return [m for m in lead_said(driver) if m["buttons"]]

            async with pumped(outbox), asyncio.timeout(120):
                (question,) = await asyncio.to_thread(wait, browser, "the question", asked)
                assert question["buttons"] == ["Allow once", "Reject"]

                await asyncio.to_thread(click, browser, "ben", "Allow once")
                refusal = "ben, only lead's approvers can answer this."
                await asyncio.to_thread(
                    wait, browser, "the refusal", lambda d: status(d) == refusal
                )
                assert not turn.done() and asked(browser)

                await asyncio.to_thread(click, browser, "ana", "Allow once")
                assert (await turn).status == "completed"

                def decided(driver: WebDriver) -> list[str]:
                    return [m["text"] for m in lead_said(driver) if "by ana at" in m["text"]]

                (text,) = await asyncio.to_thread(wait, browser, "who decided", decided)
                assert "Allow once, by ana at " in text and not asked(browser)
        assert permissions(tmp_path) == [YES]

    asyncio.run(main())
