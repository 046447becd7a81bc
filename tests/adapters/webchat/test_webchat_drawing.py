"""What the web chat's page draws, in real headless Chromium: the Markdown models write
(fenced blocks and inline code, bold and italics, links to http(s) addresses), the names a
message mentions, in any case, and nothing in a message ever drawn as HTML or followed as a
`javascript:` link, nor a name inside a word read as emphasis; no message that keeps the page
drawing; and a long channel's newest messages, more on request."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from chromium import browser_fixture, wait  # noqa: F401 (the browser fixture)
from live_webchat import drawn, running
from selenium.webdriver.remote.webdriver import WebDriver

from core.actions import Post

ANSWER = (
    "Use `ls -la` to **list** the files, *all* of them.\n"
    "```bash\nls -la <dir>\n```\n"
    "See [the manual](https://man7.org/linux/man-pages/man1/ls.1.html) or https://example.com/x.\n"
    "Not [a link](javascript:alert(1)), not <img src=x onerror=alert(1)>, not snake_case_name "
    "nor 2*3*4."
)

_READ = """
const lead = [...document.querySelectorAll('#messages li.msg')]
  .find((li) => li.dataset.user === 'lead');
if (!lead) return null;
const body = lead.querySelector('.body');
return {
  code: [...body.querySelectorAll(':scope > code')].map((e) => e.textContent),
  blocks: [...body.querySelectorAll(':scope > pre.code > code')].map((e) => e.textContent),
  strong: [...body.querySelectorAll('strong')].map((e) => e.textContent),
  em: [...body.querySelectorAll('em')].map((e) => e.textContent),
  links: [...body.querySelectorAll('a')].map((a) => [a.textContent, a.href, a.target, a.rel]),
  images: body.querySelectorAll('img').length,
  text: body.textContent,
};
"""


def test_in_the_browser_an_agent_s_markdown_is_drawn_and_nothing_runs(
    tmp_path: Path, browser: WebDriver
) -> None:
    post = Post(agent="lead", platform="webchat", conversation="general", key="k-md", text=ANSWER)
    shown = drawn(tmp_path, browser, post, _READ, "the lead's answer")
    rel = "noopener noreferrer nofollow"
    assert shown == {
        "code": ["ls -la"],
        "blocks": ["ls -la <dir>"],
        "strong": ["list"],
        "em": ["all"],
        "links": [
            [
                "the manual",
                "https://man7.org/linux/man-pages/man1/ls.1.html",
                "_blank",
                rel,
            ],
            ["https://example.com/x", "https://example.com/x", "_blank", rel],
        ],
        "images": 0,
        "text": (
            "Use ls -la to list the files, all of them.ls -la <dir>See the manual or "
            "https://example.com/x.\nNot [a link](javascript:alert(1)), not <img src=x "
            "onerror=alert(1)>, not snake_case_name nor 2*3*4."
        ),
    }


_MENTIONED = """
const asked = [...document.querySelectorAll('#messages li.msg')]
  .find((li) => li.dataset.user === 'ana');
return asked ? [...asked.querySelectorAll('.mention')].map((e) => e.textContent) : null;
"""


def test_in_the_browser_a_name_mentioned_in_any_case_is_highlighted(
    tmp_path: Path, browser: WebDriver
) -> None:
    """ "@LEAD" is the lead mentioned (the server reads it so): the page shows it as a mention,
    and "@nobody", a name of no one here, as text."""

    async def main() -> list[str]:
        async with running(tmp_path) as chat:
            await chat.chat.say("ana", "general", "@LEAD and @Ben, ask @nobody")
            await asyncio.to_thread(browser.get, chat.chat.url)
            return await asyncio.to_thread(
                wait, browser, "ana's message", lambda d: d.execute_script(_MENTIONED)
            )

    assert asyncio.run(main()) == ["@LEAD", "@Ben"]


# Each text is drawn at a quarter of its length and at full length, the best of three runs of
# each (a pause for garbage collection is not the drawing's). Linear time takes four times as
# long at full length; quadratic takes sixteen.
_TIME = """
const best = (text) => {
  let fastest = Infinity;
  for (let run = 0; run < 3; run++) {
    const started = performance.now();
    withFiles(text, []);
    fastest = Math.min(fastest, performance.now() - started);
  }
  return fastest;
};
return arguments[0].map(([mark, times]) => [
  mark,
  best(mark.repeat(Math.floor(times / 4))),
  best(mark.repeat(times)),
]);
"""


def test_in_the_browser_no_message_can_keep_the_page_drawing(
    tmp_path: Path, browser: WebDriver
) -> None:
    """A message of 40,000 characters (the most one holds) made of the Markdown's own marks
    draws in linear time: quadratic, the line of backticks alone took 1.6 s, and every page
    showing it would freeze for as long at each redraw. Time grows with length, not with its
    square; the bound is a ratio, so a slower machine draws slower but passes alike."""
    hostile = [
        ("`", 40_000),
        ("`x", 20_000),
        ("*", 40_000),
        ("**x ", 10_000),
        ("*`", 20_000),
        ("``x", 13_333),
        ("_", 40_000),
        ("[a](", 10_000),
        ("```\n", 10_000),
        ("https://", 5_000),
    ]

    async def main() -> None:
        async with running(tmp_path) as chat:
            await asyncio.to_thread(browser.get, chat.chat.url)
            await asyncio.to_thread(
                wait,
                browser,
                "the page",
                lambda d: d.execute_script("return typeof withFiles === 'function'"),
            )
            timed = await asyncio.to_thread(browser.execute_script, _TIME, hostile)
            # Milliseconds; 20 more for the noise of timings near zero.
            quadratic = [
                (mark, quarter, whole) for mark, quarter, whole in timed if whole > 8 * quarter + 20
            ]
            assert quadratic == []

    asyncio.run(main())


_DRAWN = """
const list = document.querySelector('#messages');
const earlier = list.querySelector('li.earlier button');
return {
  messages: list.querySelectorAll('li.msg').length,
  earlier: earlier ? earlier.textContent : null,
  last: [...list.querySelectorAll('li.msg .body')].pop()?.textContent,
};
"""


def test_in_the_browser_a_long_channel_draws_its_newest_messages_and_more_on_request(
    tmp_path: Path, browser: WebDriver
) -> None:
    """Every change redraws the place: with thousands of messages that kept the page busy for
    most of a second at each redraw of a streamed reply. The newest 300 are drawn, and 300 more
    at each press of the button above them."""

    async def main() -> None:
        async with running(tmp_path) as chat:
            for n in range(650):
                await chat.chat.say("ana", "ops", f"line {n}")
            await asyncio.to_thread(browser.get, chat.chat.url)
            await asyncio.to_thread(
                wait, browser, "the page", lambda d: d.execute_script("return !!state.hello")
            )
            await asyncio.to_thread(browser.execute_script, "go('ops')")

            def drawn(count: int) -> dict[str, Any]:
                def test(driver: WebDriver) -> dict[str, Any] | None:
                    found: dict[str, Any] = driver.execute_script(_DRAWN)
                    return found if found["messages"] == count else None

                return wait(browser, f"{count} messages drawn", test)

            first = await asyncio.to_thread(drawn, 300)
            assert first == {
                "messages": 300,
                "earlier": "Show 300 earlier messages (350 not shown)",
                "last": "line 649",
            }
            await asyncio.to_thread(
                browser.execute_script, "document.querySelector('li.earlier button').click()"
            )
            second = await asyncio.to_thread(drawn, 600)
            assert second["earlier"] == "Show 50 earlier messages (50 not shown)"
            await asyncio.to_thread(
                browser.execute_script, "document.querySelector('li.earlier button').click()"
            )
            assert (await asyncio.to_thread(drawn, 650))["earlier"] is None

    asyncio.run(main())
