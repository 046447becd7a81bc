"""How fast the bundled model's first answer shows in the web chat, on this machine.

    python bench/first_answer.py [--questions N] [--manifest manifests/workspaces/local.yaml]

Starts `c2a run` on the manifest (the web chat with three agents on the `local` backend, the
real model in process; `C2A_MODEL_URL` is cleared) as its own process, on a free port, and
opens the page's websocket with the run's token (set in `C2A_WEBCHAT_TOKEN`). It sends
`@lead <question>` as ana, one question at a time, and times, from the send: the lead's typing
indicator, the first visible reply (the first `message` frame of the lead's answer: its first
streamed words) and the finished reply (the frame of its final, recorded edit, or its only
frame when it was posted whole). Prints p50 and p95 of each, and the process's resident memory
(VmRSS now, VmHWM the peak) once each of the three agents has answered one question too.
Asserts nothing: the figures go to docs/benchmarks.md, with the machine's load (`uptime`)
beside them.

`--code DIR` runs `c2a run` from another checkout (the code before a change, say).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import secrets
import signal
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = (
    "what is 12 + 30?",
    "can you summarise what we decided about the release?",
    "who should review the database migration?",
    "is the deploy on staging green?",
    "what does CI stand for?",
    "can you write a one-line status update for the team?",
    "what time is the standup?",
    "which port does the web chat use?",
    "should we merge the login fix today?",
    "what is the capital of France?",
)
TOKEN_ENV = "C2A_WEBCHAT_TOKEN"
# The ready line, as printed (`open <url>`) or logged (`on <origin>/`), on either stream.
READY = re.compile(r"web chat ready(?:, open| on) (http://[^/\s]+)")
QUIET_S = 6.0  # a reply with no frame for this long is finished
PER_QUESTION_S = 120.0


@dataclass
class Timing:
    question: str
    typing: float | None = None
    first: float | None = None
    finished: float | None = None
    text: str = ""
    frames: int = 0


@dataclass
class Page:
    socket: aiohttp.ClientWebSocketResponse
    frames: list[tuple[float, dict[str, Any]]] = field(default_factory=list)

    async def read(self) -> None:
        async for frame in self.socket:
            self.frames.append((time.perf_counter(), frame.json()))


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of a process, in MB."""
    found = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("VmRSS", "VmHWM"):
            found[name] = int(value.split()[0]) // 1024
    return found


async def ask(page: Page, question: str, agent: str = "lead") -> Timing:
    timing = Timing(question)
    seen = len(page.frames)
    sent = time.perf_counter()
    await page.socket.send_json(
        {"op": "post", "as": "ana", "channel": "general", "text": f"@{agent} {question}"}
    )
    asked: str | None = None
    reply: str | None = None
    last = sent
    deadline = sent + PER_QUESTION_S
    while time.perf_counter() < deadline:
        await asyncio.sleep(0.02)
        for at, body in page.frames[seen:]:
            seen += 1
            if body["op"] == "typing" and body["user"] == agent and body["on"]:
                timing.typing = timing.typing or at - sent
            if body["op"] != "message":
                continue
            message = body["message"]
            if asked is None and message["user"] == "ana":
                asked = message["id"]
            elif message["user"] == agent and asked and message["replyTo"] == asked:
                reply = message["id"]
            if reply is not None and message["id"] == reply:
                timing.first = timing.first or at - sent
                timing.text, timing.frames, last = message["text"], timing.frames + 1, at
                if message["edited"]:
                    timing.finished = at - sent
        if timing.finished is not None:
            break
        if reply is not None and time.perf_counter() - last > QUIET_S:
            timing.finished = last - sent  # posted whole: no edit follows
            break
    return timing


def quantiles(values: list[float]) -> tuple[float, float]:
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered), p95


async def main(count: int, manifest: Path, code: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("C2A_MODEL_URL", "C2A_MODEL")}
    env["PYTHONPATH"] = str(code)
    token = env[TOKEN_ENV] = secrets.token_urlsafe(32)  # the log shows it redacted
    with tempfile.TemporaryDirectory() as data:
        command = [sys.executable, "-c", "import sys; from c2a.cli import main; sys.exit(main())"]
        args = ["run", "-m", str(manifest), "--data-dir", data, "--webchat-port", "0"]
        process = await asyncio.create_subprocess_exec(
            *command,
            *args,
            env=env,
            cwd=code,
            stderr=asyncio.subprocess.STDOUT,
            stdout=asyncio.subprocess.PIPE,
        )
        assert process.stdout is not None
        url = ""
        while not url:
            line = (await process.stdout.readline()).decode()
            if not line:
                raise SystemExit("c2a run ended before the web chat was ready")
            if found := READY.search(line):
                url = found[1]
        drain = asyncio.create_task(process.stdout.read())
        origin = url
        print(f"c2a run pid {process.pid}; idle memory {memory(process.pid)}")
        timings: list[Timing] = []
        try:
            async with (
                aiohttp.ClientSession() as http,
                http.ws_connect(f"{origin}/ws?token={token}", origin=origin) as socket,
            ):
                page = Page(socket)
                reading = asyncio.create_task(page.read())
                for question in QUESTIONS[:count]:
                    timing = await ask(page, question)
                    timings.append(timing)
                    print(
                        f"{timing.typing or -1:5.2f} s typing  {timing.first or -1:5.2f} s first"
                        f"  {timing.finished or -1:5.2f} s done  {timing.frames} frames  "
                        f"{question!r} -> {timing.text!r}"
                    )
                for agent in ("worker-1", "worker-2"):  # every agent has now run a turn
                    await ask(page, "are you there?", agent)
                reading.cancel()
            used = memory(process.pid)
        finally:
            process.send_signal(signal.SIGTERM)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), 30)
            if process.returncode is None:
                process.kill()
                await process.wait()
            drain.cancel()
    for name in ("typing", "first", "finished"):
        values = [getattr(t, name) for t in timings if getattr(t, name) is not None]
        if values:
            p50, p95 = quantiles(values)
            print(f"{name:9} p50 {p50:5.2f} s  p95 {p95:5.2f} s  ({len(values)}/{len(timings)})")
    print(f"memory after the questions: {used} (MB)")
    print(f"load: {os.getloadavg()}")
    print(json.dumps({"answers": [t.__dict__ for t in timings], "memory": used}))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--questions", type=int, default=len(QUESTIONS))
    parser.add_argument("--manifest", type=Path, default=ROOT / "manifests/workspaces/local.yaml")
    parser.add_argument("--code", type=Path, default=ROOT, help="the checkout to run")
    options = parser.parse_args()
    asyncio.run(main(options.questions, options.manifest.resolve(), options.code.resolve()))
