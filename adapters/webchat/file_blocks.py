"""An agent's files on the web chat: each shown inline, in the message, as a block the page
folds away (a `<details>` with the file's name), since the web chat keeps no files.

A block is a line `📎 <name>`, then the content between two fences of backticks longer than
any run of backticks in it, so no content can close its block early; the page recognises
exactly that shape (`page/text.js`, `withFiles`). The whole message stays within the web chat's
limit for a message's text (`adapters.limits.MAX_TEXT`): a file that does not fit is cut,
saying how much of it is not shown.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from adapters.limits import MAX_TEXT
from core.post_files import PostFile

__all__ = ["FILE_MARK", "with_files"]

FILE_MARK: Final = "📎 "
_TICKS: Final = re.compile(r"`+")


def with_files(text: str, files: Sequence[PostFile], limit: int = MAX_TEXT) -> str:
    """`text` followed by a block per file, at most `limit` characters in all."""
    if not files:
        return text
    blocks = [_block(f.name, f.content) for f in files]
    room = limit - len(text) - 2 * len(files)
    if sum(len(b) for b in blocks) > room:  # each file gets an equal share of what is left
        share = room // len(files)
        blocks = [_block(f.name, _cut(f.content, share - len(f.name) - 80)) for f in files]
    return "\n\n".join([text, *blocks])


def _block(name: str, content: str) -> str:
    longest = max((len(run) for run in _TICKS.findall(content)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{FILE_MARK}{name}\n{fence}\n{content}\n{fence}"


def _cut(content: str, most: int) -> str:
    if len(content) <= most:
        return content
    kept = max(0, most - 60)
    return f"{content[:kept]}\n… ({len(content) - kept:,} more characters not shown here)"
