"""A fake OpenAI-compatible model on 127.0.0.1 that answers by rule, for whole-product tests.

Unlike `FakeOpenAI`'s fixed script, it reads each request the way a well-behaved model would:
the events of the turn (the rendered `C2A EVENT` blocks of the last user message) and the tool
results since. For every `must_respond` event it replies once with `chat_send_message`; an event
addressed to one of the agent's roles (`to_my_role`, `must_respond` or `may_respond`) is claimed
first (`chat_claim`), and answered only if the claim was granted. Everything else it leaves
alone. A reply quotes the start of the words it answers, so tests can tell replies apart.

Asked on the text path (no tools offered), it answers the last line of the message in plain
words, streamed when asked (`on it: <its start>`), and to a yes/no question held to a schema
(`response_format`) it says yes.

    async with AttentiveModel() as model:
        env = {"C2A_MODEL_URL": model.base_url}
        ...
    model.calls  # every tool call it made: (tool name, arguments)
"""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any, Self

from aiohttp import web

from harness_bridge.prompt import parse_rendered

__all__ = ["AttentiveModel"]

Json = dict[str, Any]


class AttentiveModel:
    """The server; `base_url` once started."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Json]] = []
        self.requests = 0
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    async def __aenter__(self) -> Self:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._complete)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base_url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/v1"
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": "attentive"}]})

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests += 1
        if "tools" not in body:
            return await self._plain(request, body)
        call = next_call(body["messages"])
        if call is not None:
            self.calls.append(call)
        return web.json_response(_completion(call))

    async def _plain(self, request: web.Request, body: Json) -> web.StreamResponse:
        """The text path: a choice held to a schema, or an answer in plain words."""
        if "response_format" in body:
            return web.json_response(_text_completion(json.dumps({"answer": "yes"})))
        asked = str(body["messages"][-1]["content"]).rsplit("\n", 1)[-1]
        words = asked.partition(": ")[2][:40]
        text = f"on it: {words}"
        if not body.get("stream"):
            return web.json_response(_text_completion(text))
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for piece in (text[:8], text[8:]):
            chunk = {"choices": [{"index": 0, "delta": {"content": piece}}]}
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _text_completion(text: str) -> Json:
    return {"choices": [{"index": 0, "message": {"role": "assistant", "content": text}}]}


def next_call(messages: list[Json]) -> tuple[str, Json] | None:
    """The one tool call to make next, or None when the turn is done."""
    turn = max(i for i, m in enumerate(messages) if m["role"] == "user")
    events = parse_rendered(str(messages[turn]["content"]))
    results = [_result(m) for m in messages[turn + 1 :] if m["role"] == "tool"]
    done = [m for m in messages[turn + 1 :] if m["role"] == "assistant"]
    answered = {
        json.loads(c["function"]["arguments"]).get("inReplyTo")
        for m in done
        for c in m.get("tool_calls") or []
        if c["function"]["name"] == "chat_send_message"
    }
    claims = {
        json.loads(c["function"]["arguments"])["eventId"]: results[i]
        for i, c in enumerate(c for m in done for c in m.get("tool_calls") or [])
        if c["function"]["name"] == "chat_claim" and i < len(results)
    }
    for event in events:
        eid = event["event_id"]
        policy, role = event.get("response_policy"), event.get("directedness") == "to_my_role"
        asked = policy == "must_respond" or (role and policy == "may_respond")
        if not asked or eid in answered:
            continue
        if role:
            if eid not in claims:
                return "chat_claim", {"eventId": eid}
            if not claims[eid].get("claimed"):
                continue
        kind, _, conversation = event["conversation"].partition(" ")
        target: Json = {"conversation": conversation}
        if "thread" in event:
            target["thread"] = event["thread"]
        words = event.get("message", "")[:40]
        return "chat_send_message", {
            "target": target,
            "text": f"on it ({kind}): {words}",
            "inReplyTo": eid,
        }
    return None


def _result(message: Json) -> Json:
    try:
        value = json.loads(message.get("content") or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _completion(call: tuple[str, Json] | None) -> Json:
    message: Json = {"role": "assistant", "content": None if call else "done"}
    if call is not None:
        name, arguments = call
        message["tool_calls"] = [
            {
                "id": f"call_{name}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ]
    return {
        "id": "chatcmpl-attentive",
        "object": "chat.completion",
        "created": 1767225600,
        "model": "attentive",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if call else "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
