"""The prompt of the text reply path (`harness_bridge.backends.text_reply`), for a model too
small for the tool protocol: no header and no rules. `text_messages` is a three-line system
prompt, the recent messages and the one to answer, each as one `name: text` line;
`choice_messages` asks whether to answer at all. Each line is cleaned, flattened to one line
and capped (`harness_bridge.prompt_format`), so chat text can never start a line of its own
and pass for another speaker.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from harness_bridge.prompt_format import clean, one_line

__all__ = ["MAX_LINE_CHARS", "choice_messages", "plain_line", "text_messages"]

MAX_LINE_CHARS: Final = 600


def plain_line(author: str, text: str) -> str:
    """One chat message as the text path shows it: `author: text`, each cleaned, flattened to
    one line and capped (the name at `MAX_VALUE_CHARS`, the text at `MAX_LINE_CHARS`)."""
    flat = " ".join(clean(text).split())
    if len(flat) > MAX_LINE_CHARS:
        flat = flat[:MAX_LINE_CHARS] + "…"
    return f"{one_line(author)}: {flat or '[no text]'}"


def text_messages(agent: str, recent: Sequence[str], new: Sequence[str]) -> list[dict[str, str]]:
    """The plain-text prompt: who `agent` is and how to answer, three worked examples, then the
    `recent` lines and the `new` ones to answer (lines from `plain_line`). The form was chosen
    on bench/small_model_prompts.py's cases (docs/benchmarks.md)."""
    name = one_line(agent)
    system = "\n".join(
        (
            f"You are {name}, a helpful member of a team chat.",
            "Answer the last message directly, in one or two short sentences.",
            "If you cannot know or check something, say so plainly.",
        )
    )
    return [{"role": "system", "content": system}, *_examples(name), _conversation(recent, new)]


def _examples(name: str) -> list[dict[str, str]]:
    """Worked examples: an answer from a message above, a fact it cannot check, a thanks."""
    return [
        _conversation(
            ["dev: the build takes 12 minutes"], [f"ops: @{name} how long is the build?"]
        ),
        {"role": "assistant", "content": "The build takes 12 minutes."},
        _conversation([], [f"ops: @{name} is the VPN up right now?"]),
        {"role": "assistant", "content": "I can't check the VPN from here, sorry."},
        _conversation([], [f"dev: @{name} thanks a lot!"]),
        {"role": "assistant", "content": "You're welcome!"},
    ]


def choice_messages(agent: str, recent: Sequence[str], new: Sequence[str]) -> list[dict[str, str]]:
    """Whether `agent` should answer the `new` lines, as a question whose answer is constrained
    to `yes` or `no` by the caller."""
    name = one_line(agent)
    system = "\n".join(
        (
            f"You are {name}, a member of a team chat.",
            f"Say yes if the last message asks {name} a question or for help;"
            " say no for thanks, chatter or messages for someone else.",
            "Answer only yes or no.",
        )
    )
    return [{"role": "system", "content": system}, _conversation(recent, new)]


def _conversation(recent: Sequence[str], new: Sequence[str]) -> dict[str, str]:
    context = "Recent messages:\n" + "\n".join(recent) + "\n\n" if recent else ""
    return {"role": "user", "content": f"{context}Message:\n" + "\n".join(new)}
