"""`c2a run` end to end with a message full of secrets: a person pastes every kind into the
web chat, the lead's model answers and tries to echo its own API key, and afterwards no secret
is in the ledger's bytes (file and write-ahead log), the log lines, what the model received,
or the reply posted in the channel."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

import pytest
import yaml
from aiohttp import web
from builders import LOCAL
from fakes.attentive_model import AttentiveModel
from secret_samples import CONFIGURED_SECRET, every_secret, message_with_every_secret
from webchat_run import webchat_run

from c2a.logs import configure_logging

KEY_VARIABLE = "C2A_TEST_MODEL_KEY"


class EchoingModel(AttentiveModel):
    """The rule-following model, which also keeps what the harness told it (every message of
    every request but its own earlier answers) and, careless with what it knows, appends its
    own API key to each reply it posts."""

    def __init__(self) -> None:
        super().__init__()
        self.received: list[str] = []

    async def _complete(self, request: web.Request) -> web.Response:
        messages = json.loads(await request.text())["messages"]
        self.received.extend(json.dumps(m) for m in messages if m["role"] != "assistant")
        response = await super()._complete(request)
        assert isinstance(response.body, bytes)
        body = json.loads(response.body)
        for call in body["choices"][0]["message"].get("tool_calls") or []:
            if call["function"]["name"] == "chat_send_message":
                arguments = json.loads(call["function"]["arguments"])
                arguments["text"] += f" (my key is {CONFIGURED_SECRET})"
                call["function"]["arguments"] = json.dumps(arguments)
        return web.json_response(body)


def manifest(directory: Path, model_url: str) -> Path:
    data = yaml.safe_load(LOCAL.read_text())
    harness = {
        "backend": "openai",
        "base_url": model_url,
        "model": "m",
        "quiet_ms": 100,
        "api_key_env": KEY_VARIABLE,
    }
    for agent in data["agents"].values():
        agent.pop("slack", None)
        agent.pop("discord", None)
        agent["harness"] = dict(harness)  # its own copy: a shared one is dumped as a YAML alias
    path = directory / "local.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def leaks(where: str) -> list[str]:
    return [secret for secret in every_secret() if secret in where]


def stored_bytes(data: Path) -> str:
    """Every file the run left in its data directory: the ledger, its WAL, the web chat's
    record."""
    files = sorted(data.glob("*.sqlite3*")) + sorted(data.glob("*.webchat.jsonl"))
    assert any(path.name.endswith(".webchat.jsonl") for path in files)
    found = b"".join(path.read_bytes() for path in files)
    return found.decode("utf-8", "replace")


async def until(test: object, what: str, seconds: float = 20.0) -> None:
    assert callable(test)
    try:
        async with asyncio.timeout(seconds):
            while not test():
                await asyncio.sleep(0.02)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


def test_no_secret_pasted_into_the_chat_is_stored_logged_shown_to_a_model_or_echoed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_VARIABLE, CONFIGURED_SECRET)  # the model client reads it from here
    logs = io.StringIO()
    configure_logging("json", logs)

    async def scenario(model: EchoingModel) -> list[str]:
        environ = {KEY_VARIABLE: CONFIGURED_SECRET}
        manifest_path = manifest(tmp_path, model.base_url)
        async with webchat_run(manifest_path, tmp_path / "data", environ) as (_, chat, socket):
            post = {"op": "post", "as": "ana", "channel": "general"}
            await socket.send_json({**post, "text": message_with_every_secret()})
            await until(lambda: len(chat.history.messages) >= 1, "the post to land")
            asked = next(iter(chat.history.messages))
            await until(lambda: any(m.reply_to == asked for m in chat.history), "the lead's reply")
            replies = [m.text for m in chat.history if m.reply_to == asked]
        return replies

    async def main() -> list[str]:
        async with EchoingModel() as model:
            replies = await scenario(model)
        assert model.received
        assert leaks("\n".join(model.received)) == []
        assert "[redacted:private-key]" in "\n".join(model.received)
        return replies

    replies = asyncio.run(main())
    assert replies and all("my key is [redacted:configured-secret]" in r for r in replies)
    assert leaks("\n".join(replies)) == []
    stored = stored_bytes(tmp_path / "data")
    assert "[redacted:aws-secret]" in stored
    assert leaks(stored) == []
    assert logs.getvalue()
    assert leaks(logs.getvalue()) == []
