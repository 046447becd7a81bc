"""The mark a streamed reply's message carries while it is still being written.

A reply shown as the model writes it (`harness_bridge.streamed_reply`) ends its message with
`WRITING` from its first post through every redraw; its final edit, with the whole text, takes
the mark away. A platform may read the mark too: the web chat shows an agent's edit of a
message still marked as a finish, not as an edit (`adapters.webchat.history`). A message left
marked was cut short (a crash, a kill of the process) and never passes for a whole answer.
"""

from __future__ import annotations

from typing import Final

__all__ = ["WRITING"]

WRITING: Final = " …"
