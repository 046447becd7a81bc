"""A fake server on its own event loop in a thread, for code under test that blocks its own
loop while it asks the server (such as the model-server probe, which is synchronous).

    with in_thread(FakeOpenAI(script)) as server:
        ...
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from typing import TypeVar

__all__ = ["in_thread"]

T = TypeVar("T")
WAIT_S = 10.0


@contextmanager
def in_thread(server: AbstractAsyncContextManager[T]) -> Iterator[T]:
    """`server` entered and, at the end, exited on a loop of its own in another thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="fake-server", daemon=True)
    thread.start()
    try:
        entered = asyncio.run_coroutine_threadsafe(server.__aenter__(), loop).result(WAIT_S)
        try:
            yield entered
        finally:
            exit_ = server.__aexit__(None, None, None)
            asyncio.run_coroutine_threadsafe(exit_, loop).result(WAIT_S)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(WAIT_S)
        loop.close()
