"""`c2a run` with agents the manifest gives no harness, as `c2a init`'s manifest starts: nothing
answers them, and nothing pretends otherwise. A question to one gets the `blocked` signal, not
`seen`; the asker is told; the page and the start's log say why; `/healthz` lists them without
calling the process unhealthy. A reload that gives one a harness makes it answer what waited.
In-process, with the page's websocket, the real host and ledger, and a model that answers by
rule."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import LOCAL
from fakes.attentive_model import AttentiveModel
from test_run_webchat import Browser, until
from webchat_run import webchat_run

from c2a.run_report import health
from core.notices import UNAVAILABLE

AGENTS = ["lead", "worker-1", "worker-2"]
BLOCKED, SEEN = "🚧", "👀"


def write(path: Path, harnesses: dict[str, dict[str, Any]]) -> None:
    """The example team on the web chat alone, the asker told at once when nothing answers,
    and a harness only for the agents in `harnesses`."""
    data = yaml.safe_load(LOCAL.read_text())
    data["attention"] = {**data.get("attention", {}), "notice_after_ms": 0}
    for agent, config in data["agents"].items():
        config.pop("slack", None)
        config.pop("discord", None)
        config.pop("harness", None)
        if agent in harnesses:
            config["harness"] = harnesses[agent]
    path.write_text(yaml.safe_dump(data))


def reacted(browser: Browser, message: str, agent: str) -> set[str]:
    """The glyphs `agent` has on `message` in the web chat."""
    shown = browser.chat.history.messages[message]
    return {glyph for glyph, users in shown.reactions.items() if agent in users}


def told(browser: Browser) -> list[dict[str, Any]]:
    """What the page was last told about the models."""
    frames = [f["models"] for f in browser.frames if f["op"] in ("hello", "models")]
    return frames[-1] if frames else {}


def test_a_question_to_an_agent_with_no_harness_is_marked_blocked_and_the_asker_told(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manifest = tmp_path / "team.yaml"
    write(manifest, {})

    async def scenario() -> tuple[dict[str, Any], dict[str, Any]]:
        async with webchat_run(manifest, tmp_path / "data") as (run, chat, socket):
            browser = Browser(socket, chat)
            reader = asyncio.create_task(browser.read())
            asked = await browser.post("@lead are you there?")
            await until(lambda: BLOCKED in reacted(browser, asked, "lead"), "the blocked mark")
            await until(lambda: browser.replies_to(asked) == ["lead"], "the notice")
            assert reacted(browser, asked, "lead") == {BLOCKED}
            notice = list(chat.history.messages.values())[-1]
            assert notice.text == UNAVAILABLE
            reader.cancel()
            return told(browser), (await health([run]))["workspaces"]["local"]

    with caplog.at_level(logging.INFO, logger="c2a.run"):
        models, said = asyncio.run(scenario())
    assert sorted(models) == AGENTS
    assert {m["state"] for m in models.values()} == {"none"}
    assert said["unanswered"] == AGENTS and said["unavailable"] == []
    [warning] = [r for r in caplog.records if "no harness for" in r.getMessage()]
    assert warning.levelno == logging.WARNING
    assert "lead, worker-1, worker-2" in warning.getMessage()


def test_a_reload_that_gives_an_agent_a_harness_has_it_answer_what_waited(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    manifest = tmp_path / "team.yaml"
    write(manifest, {})

    async def scenario(model: AttentiveModel) -> tuple[dict[str, Any], dict[str, Any]]:
        reload = asyncio.Event()
        async with webchat_run(manifest, tmp_path / "data", reload=reload) as started:
            run, chat, socket = started
            browser = Browser(socket, chat)
            reader = asyncio.create_task(browser.read())
            asked = await browser.post("@lead can you check the deploy?")
            await until(lambda: BLOCKED in reacted(browser, asked, "lead"), "the blocked mark")
            harness = {"backend": "openai", "base_url": model.base_url, "model": "m"}
            write(manifest, {"lead": harness})
            reload.set()

            def answered() -> bool:
                return any(m.text.startswith("on it") for m in chat.history if m.reply_to == asked)

            await until(answered, "the lead's answer")
            await until(lambda: SEEN in reacted(browser, asked, "lead"), "blocked made seen")
            assert reacted(browser, asked, "lead") == {SEEN}
            assert "lead" not in run.host.engine.unavailable
            reader.cancel()
            return told(browser), (await health([run]))["workspaces"]["local"]

    async def with_model() -> tuple[dict[str, Any], dict[str, Any]]:
        async with AttentiveModel() as model:
            return await scenario(model)

    with caplog.at_level(logging.INFO, logger="c2a.run"):
        models, said = asyncio.run(with_model())
    assert "harnesses restarted: none; platforms reconnected: none; harnesses started: lead" in (
        caplog.text
    )
    assert models["lead"]["state"] == "ready"
    assert {models[a]["state"] for a in AGENTS[1:]} == {"none"}
    assert said["unanswered"] == AGENTS[1:]
