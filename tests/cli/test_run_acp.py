"""`c2a run` with an agent on the `acp` backend, end to end in the web chat: a person asks the
lead, the fake ACP agent (a real subprocess, `tests/harness_bridge/fake_acp_agent.py`)
answers through its chat tools: the run's own HTTP endpoint when the agent takes HTTP MCP
servers, else the MCP server process (`python -m c2a.mcp_cli`, another real subprocess),
which writes the run's own ledger; and the run sends the answer to the page. The manifest
names neither a manifest nor a ledger for the harness: the run gives its own. One that names
another ledger is refused at start, saying why."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from builders import ROOT
from webchat_run import webchat_run

from core.errors import ManifestError

FAKE = ROOT / "tests" / "harness_bridge" / "fake_acp_agent.py"
SHIPPED = ROOT / "manifests" / "workspaces" / "local.yaml"
ANSWER_S = 90.0  # three Python processes start on a busy machine


def acp_manifest(directory: Path, **harness: Any) -> Path:
    """The shipped local manifest with the lead on the fake ACP agent (recording into
    `directory`) and the workers on no harness at all."""
    data = yaml.safe_load(SHIPPED.read_text())
    env = {"FAKE_ACP_RECORD": str(directory / "agent.jsonl"), **harness.pop("env", {})}
    lead = {"backend": "acp", "command": [sys.executable, str(FAKE)], "env": env, **harness}
    data["agents"]["lead"]["harness"] = {**lead, "quiet_ms": 0}
    for worker in ("worker-1", "worker-2"):
        del data["agents"][worker]["harness"]
    path = directory / "local.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize("http", [False, True], ids=["stdio-tools", "http-tools"])
def test_an_acp_agent_s_answer_reaches_the_page_through_the_run_s_own_ledger(
    tmp_path: Path, http: bool
) -> None:
    """The agent is given the API key the manifest passes by name, and nothing else of the
    environment c2a runs in but the few variables every subprocess gets."""
    environ = {"ANTHROPIC_API_KEY": "sk-ant-not-a-real-key", "C2A_OTHER_SECRET": "kept-here"}
    env = {"FAKE_ACP_HTTP": "1"} if http else {}

    async def scenario() -> list[tuple[str, str | None]]:
        manifest = acp_manifest(tmp_path, pass_env=["ANTHROPIC_API_KEY"], env=env)
        async with webchat_run(manifest, tmp_path / "data", environ) as (_, chat, socket):
            await socket.send_json(
                {"op": "post", "as": "ana", "channel": "general", "text": "@lead is it green?"}
            )
            async with asyncio.timeout(ANSWER_S):
                while not any(m.user == "lead" for m in chat.history):
                    await asyncio.sleep(0.05)
            return [(m.user, m.reply_to) for m in chat.history]

    said = asyncio.run(scenario())
    asked = next(m for m in said if m[0] == "ana")
    assert said.count(("lead", "1")) == 1 and asked == ("ana", None)
    assert (tmp_path / "data" / "local.acp-lead.json").exists()  # sessions beside the ledger
    records = [json.loads(line) for line in (tmp_path / "agent.jsonl").read_text().splitlines()]
    given = next(r["environ"] for r in records if r["kind"] == "initialize")
    assert "ANTHROPIC_API_KEY" in given and "C2A_OTHER_SECRET" not in given
    (server,) = next(r["mcp_servers"] for r in records if r["kind"] == "new_session")
    assert server.get("type") == ("http" if http else None)


@pytest.mark.parametrize(
    ("harness", "refusal"),
    [
        ({"store": "elsewhere.sqlite3"}, r"agents\.lead\.harness\.store is .*leave `store` out"),
        ({"pass_env": ["ANTHROPIC_API_KEY"]}, r"pass_env: ANTHROPIC_API_KEY is not set in the"),
    ],
)
def test_a_harness_that_cannot_work_is_refused_at_start_saying_why(
    tmp_path: Path, harness: dict[str, Any], refusal: str
) -> None:
    """A ledger other than the run's own (the answers would go nowhere), or an API key to pass
    that the environment does not have."""
    manifest = acp_manifest(tmp_path, **harness)

    async def scenario() -> None:
        async with webchat_run(manifest, tmp_path / "data"):
            pass

    with pytest.raises(ManifestError, match=refusal):
        asyncio.run(scenario())
