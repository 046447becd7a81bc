"""Code fences in a plain answer: which block a text leaves open, and closing it."""

from __future__ import annotations

import pytest

from harness_bridge.fences import fences_closed, open_fence


@pytest.mark.parametrize(
    ("answer", "fence", "shown"),
    [
        (
            "Like this:\n```python\nprint(s[::-1])",
            "```python",
            "Like this:\n```python\nprint(s[::-1])\n```",
        ),
        ("Like this:\n```\nls\n```", None, "Like this:\n```\nls\n```"),  # closed already
        ("```sh\nls\n```\nthen\n  ```\nrm", "```", "```sh\nls\n```\nthen\n  ```\nrm\n```"),
        ("Use `ls`, or ```ls -la``` inline.", None, "Use `ls`, or ```ls -la``` inline."),
        ("```ls -la``` lists them all.", None, "```ls -la``` lists them all."),
        ("```not a language!\nx", "```", "```not a language!\nx\n```"),
        ("Paris.", None, "Paris."),
    ],
)
def test_a_block_left_open_is_found_and_closed(answer: str, fence: str | None, shown: str) -> None:
    assert open_fence(answer) == fence
    assert fences_closed(answer) == shown
