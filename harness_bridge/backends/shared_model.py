"""One model file loaded once in this process, whichever agents use it (`SharedModel`).

It owns the loaded llama.cpp model (a `Llama` that checks for a cancel before each piece of the
prompt it reads and each token it writes, and bounds every completion), the one worker-thread
generation at a time, the order in which requests wait for it, and unloading it when its last
client has gone. `LocalModelClient` (`harness_bridge.backends.local_model`) is its client.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from time import perf_counter
from typing import TYPE_CHECKING, Any, Final

from core.errors import ModelRefusedTurn
from harness_bridge.backends.chat_completions import ModelError

if TYPE_CHECKING:
    from llama_cpp import Llama

__all__ = ["CONTEXT_TOKENS", "READ_CHUNK", "Halted", "SharedModel", "retrieve"]

CHAT_FORMAT: Final = "chatml-function-calling"
CONTEXT_TOKENS: Final = 8192  # SmolLM2's training context
READ_CHUNK: Final = 64  # prompt tokens read between two checks for a cancel


class Halted(Exception):
    """The generation was stopped because its caller was cancelled."""


class SharedModel:
    """One model file loaded once in this process, whichever clients use it: one generation at
    a time, the waiting requests served in order (`turn`). Unloaded when its last client
    closes."""

    def __init__(self, path: Path, threads: int, seed: int) -> None:
        self.path = path
        self.threads = threads
        self.seed = seed
        self.load_seconds: float | None = None
        self.halt: threading.Event | None = None  # the running generation's stop flag
        self.max_tokens = 256  # the running generation's bound
        self._model: Llama | None = None
        self._users: set[int] = set()
        self._lock = threading.Lock()  # the worker thread's side: one generation, one load
        self._queues: dict[asyncio.AbstractEventLoop, asyncio.Lock] = {}

    @classmethod
    def of(cls, path: Path, threads: int, seed: int) -> SharedModel:
        """The process's model for `path`, created (not loaded) the first time it is asked."""
        with _REGISTRY_LOCK:
            key = (path.resolve(), threads, seed)
            shared = _REGISTRY.get(key)
            if shared is None:
                shared = _REGISTRY[key] = cls(path, threads, seed)
            return shared

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def turn(self) -> asyncio.Lock:
        """The queue of this event loop's requests (`asyncio.Lock` wakes waiters in order, and
        a cancelled waiter simply leaves)."""
        loop = asyncio.get_running_loop()
        queue = self._queues.get(loop)
        if queue is None:
            self._queues = {loop: asyncio.Lock()}  # a finished loop's queue is dropped
            queue = self._queues[loop]
        return queue

    def use(self, client: object) -> None:
        self._users.add(id(client))

    def release(self, client: object) -> bool:
        """`client` is done with the model; True when it was the last (unload it then)."""
        self._users.discard(id(client))
        return not self._users

    def run(self, work: Callable[[Llama], Any], halt: threading.Event, max_tokens: int) -> Any:
        """In the worker thread: `work` on the loaded model, unless the request was cancelled."""
        with self._lock:
            if halt.is_set():
                raise Halted
            model = self._model or self._load()
            self.halt, self.max_tokens = halt, max_tokens
            try:
                return work(model)
            except Halted:
                raise
            except ModelError:
                raise
            except Exception as exc:  # loaded, it failed on this request (too long, say)
                raise ModelRefusedTurn(
                    f"the local model {self.path.name} failed: {str(exc) or type(exc).__name__}"
                ) from exc
            finally:
                self.halt = None

    def check(self) -> None:
        halt = self.halt
        if halt is not None and halt.is_set():
            raise Halted

    def unload(self) -> None:
        with self._lock:
            if self._model is not None and not self._users:
                self._model.close()
                self._model = None

    def _load(self) -> Llama:
        from llama_cpp import Llama

        shared = self

        class Stoppable(Llama):
            """Checks for a cancel while it reads the prompt and before each token it writes,
            and bounds every completion."""

            def eval(self, tokens: Sequence[int]) -> None:
                for start in range(0, len(tokens), READ_CHUNK):
                    shared.check()
                    super().eval(tokens[start : start + READ_CHUNK])

            def create_completion(self, *args: Any, **kwargs: Any) -> Any:
                asked = kwargs.get("max_tokens")
                kwargs["max_tokens"] = min(asked or shared.max_tokens, shared.max_tokens)
                return super().create_completion(*args, **kwargs)

        started = perf_counter()
        try:
            model = Stoppable(
                model_path=str(self.path),
                n_ctx=CONTEXT_TOKENS,
                n_threads=self.threads,
                n_threads_batch=self.threads,
                seed=self.seed,
                chat_format=CHAT_FORMAT,
                verbose=False,
            )
        except Exception as exc:
            raise ModelError(f"the model file {self.path} does not load: {exc}") from exc
        self.load_seconds = perf_counter() - started
        self._model = model
        return model


_REGISTRY: dict[tuple[Path, int, int], SharedModel] = {}
_REGISTRY_LOCK = threading.Lock()


def retrieve(work: asyncio.Future[Any]) -> None:
    """A done callback that reads a cancelled generation's end (`Halted`: expected, not news)."""
    if not work.cancelled():
        work.exception()
