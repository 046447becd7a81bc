"""Agent backends: what drives each agent's model or harness from the harness bridge.

| module | owns |
|---|---|
| `openai` | the built-in model loop against any OpenAI-compatible chat-completions server |
| `chat_client` | one HTTP client for a `/chat/completions` endpoint (aiohttp, streaming) |
| `chat_completions` | that API's wire format: function tools, replies, streamed chunks |
"""

from core.errors import ModelError
from harness_bridge.backends.chat_client import ChatClient
from harness_bridge.backends.openai import (
    OpenAIModelLoop,
    Progress,
    ToolCaller,
    TurnResult,
    record_failure,
    session_of,
)

__all__ = [
    "ChatClient",
    "ModelError",
    "OpenAIModelLoop",
    "Progress",
    "ToolCaller",
    "TurnResult",
    "record_failure",
    "session_of",
]
