"""Which plain-text prompt gets the best answers out of the bundled model (SmolLM2-135M).

    python bench/small_model_prompts.py [--forms shipped,turns,examples] [--show]

Fourteen team-chat cases (a thread to summarise, an answer in a message above, arithmetic, a
request to a role, a question the agent cannot check, thanks, chatter, a new question after the
agent's own answer, a follow-up to it, ...), each with the recent messages and the message to
`lead`, are put to the model in each prompt form, through the same `LocalModelClient.stream_text`
that the text reply path uses. An answer is acceptable when it passes the case's check (the fact
it must contain, or the words it must not) and is short and in the agent's own voice (no `name:`
line of someone else's). Prints, per form, the acceptable count, the mean and worst time to the
first token and to the end, and with `--show` every answer. `shipped` is
`harness_bridge.prompt.text_messages`, the form the text path uses; `others-only` leaves out the
agent's own lines.
Asserts nothing; the figures are in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from harness_bridge.backends.local_model import LocalModelClient
from harness_bridge.backends.text_reply import MAX_ANSWER_TOKENS
from harness_bridge.prompt import plain_line, text_messages

Messages = list[dict[str, str]]


@dataclass(frozen=True)
class Case:
    name: str
    recent: tuple[tuple[str, str], ...]
    message: str
    check: Callable[[str], bool]


def has(*words: str) -> Callable[[str], bool]:
    return lambda text: any(word in text.lower() for word in words)


def lacks(*words: str) -> Callable[[str], bool]:
    return lambda text: not any(word in text.lower() for word in words)


CASES = (
    Case(
        "summarise a thread",
        (
            ("ben", "the deploy failed at 14:00, the database migration timed out"),
            ("ana", "I rolled it back at 14:20"),
            ("ben", "we retry tomorrow at 9"),
        ),
        "@lead can you summarise this thread in one sentence?",
        has("migration", "rolled back", "retry", "tomorrow"),
    ),
    Case(
        "answer from a message above",
        (("ben", "heads up: the standup moves to 10:30 tomorrow"),),
        "@lead when is the standup tomorrow?",
        has("10:30"),
    ),
    Case("arithmetic", (), "@lead what is 12 + 30?", has("42")),
    Case(
        "a request to a role",
        (),
        "@lead please ask the backend team to look at the flaky login test",
        has("backend", "ask", "will", "sure", "ok"),
    ),
    Case(
        "a question it cannot check",
        (),
        "@lead is the production database healthy right now?",
        has("can't", "cannot", "not able", "unable", "don't know", "do not know", "no access"),
    ),
    Case("thanks", (), "@lead thanks, that's all for today!", has("welcome", "thank", "bye")),
    Case(
        "chatter",
        (("ben", "the pizza place downstairs reopened"),),
        "@lead lunch was great today",
        lacks("error", "database", "deploy"),
    ),
    Case("a definition", (), "@lead what does CI stand for?", has("continuous integration")),
    Case(
        "a decision from the thread",
        (("ben", "the login fix passed all tests and two reviews"),),
        "@lead should we merge the login fix today?",
        has("yes", "merge it", "go ahead", "should merge", "can merge"),
    ),
    Case(
        "status from a message above",
        (("ben", "staging is green, production is still red"),),
        "@lead is production green?",
        has("no", "red", "not green", "isn't"),
    ),
    # Its own earlier answers above: a small model copies what it sees itself say.
    Case(
        "a new question after an answer",
        (
            ("ana", "@lead how do I reverse a string in python?"),
            ("lead", "You can reverse a string in Python with slicing: text[::-1]"),
        ),
        "@lead what is 12 + 30?",
        lambda text: has("42")(text) and lacks("reverse", "slicing")(text),
    ),
    Case(
        "a new request after a long answer",
        (
            ("ana", "@lead write a story about a dragon"),
            (
                "lead",
                "A dragon and a knight: a dragon and a knight are two of the most iconic "
                "creatures in the world of literature.",
            ),
        ),
        "@lead write two lines about the sea",
        lambda text: has("sea", "wave", "ocean")(text) and lacks("dragon", "knight")(text),
    ),
    Case(
        "a follow-up to its own answer",
        (
            ("ana", "@lead when is the release?"),
            ("lead", "The release is on Friday."),
        ),
        "@lead sorry, which day did you say?",
        has("friday"),
    ),
    Case(
        "a follow-up that needs the question above",
        (
            ("ana", "@lead what is the capital of Italy?"),
            ("lead", "The capital of Italy is Rome."),
        ),
        "@lead and of France?",
        has("paris"),
    ),
)


def lines(case: Case) -> tuple[list[str], list[str]]:
    return [plain_line(a, t) for a, t in case.recent], [plain_line("ana", case.message)]


def shipped(case: Case) -> Messages:
    return text_messages("lead", *lines(case))


def turns(case: Case) -> Messages:
    """The history as chat turns: others' lines as user messages, no framing."""
    recent, new = lines(case)
    system = "You are lead, a helpful member of a team chat. Answer briefly."
    return [
        {"role": "system", "content": system},
        *({"role": "user", "content": line} for line in [*recent, *new]),
    ]


def bare(case: Case) -> Messages:
    """One line of system prompt, the lines with no headings."""
    recent, new = lines(case)
    return [
        {"role": "system", "content": "You are lead in a team chat. Reply briefly."},
        {"role": "user", "content": "\n".join([*recent, *new])},
    ]


def no_examples(case: Case) -> Messages:
    """The shipped form without its worked examples."""
    system, *_, ask = shipped(case)
    return [system, ask]


def unmentioned(case: Case) -> Messages:
    """The shipped form, the message without the `@lead` it was sent with."""
    recent, _ = lines(case)
    return text_messages("lead", recent, [plain_line("ana", case.message.removeprefix("@lead "))])


def others_only(case: Case) -> Messages:
    """The shipped form without the agent's own earlier lines."""
    others = [plain_line(a, t) for a, t in case.recent if a != "lead"]
    return text_messages("lead", others, lines(case)[1])


FORMS: Mapping[str, Callable[[Case], Messages]] = {
    "shipped": shipped,
    "others-only": others_only,
    "no-examples": no_examples,
    "unmentioned": unmentioned,
    "turns": turns,
    "bare": bare,
}
SPEAKER = re.compile(r"^\s*(ana|ben|lead)\s*:", re.IGNORECASE | re.MULTILINE)


def acceptable(case: Case, answer: str) -> bool:
    said = answer.strip()
    return bool(said) and len(said) <= 300 and not SPEAKER.search(said) and case.check(said)


async def run_form(
    model: LocalModelClient, form: Callable[[Case], Messages], options: dict[str, Any]
) -> list[tuple[Case, str, float, float]]:
    results = []
    for case in CASES:
        started = time.perf_counter()
        first: list[float] = []

        async def on_text(piece: str, first: list[float] = first, started: float = started) -> None:
            if not first:
                first.append(time.perf_counter() - started)

        model.options = dict(options)
        answer = await model.stream_text(form(case), on_text, max_tokens=MAX_ANSWER_TOKENS)
        total = time.perf_counter() - started
        results.append((case, answer, first[0] if first else total, total))
    return results


async def main(forms: Sequence[str], show: bool, variants: bool) -> None:
    model = LocalModelClient()
    await model.stream_text([{"role": "user", "content": "hi"}], _ignore, max_tokens=1)  # load
    settings = [("", {})]
    if variants:
        settings += [
            (" rp1.15", {"repeat_penalty": 1.15}),
            (" t0.3", {"temperature": 0.3}),
        ]
    for name in forms:
        for suffix, options in settings:
            results = await run_form(model, FORMS[name], {"temperature": 0.0, **options})
            good = sum(acceptable(case, answer) for case, answer, _, _ in results)
            firsts = [f for _, _, f, _ in results]
            totals = [t for _, _, _, t in results]
            print(
                f"{name + suffix:18} {good:2}/{len(results)} acceptable; first token mean "
                f"{sum(firsts) / len(firsts):.2f} s max {max(firsts):.2f} s; answer mean "
                f"{sum(totals) / len(totals):.2f} s max {max(totals):.2f} s"
            )
            if show:
                for case, answer, _first, total in results:
                    mark = "ok " if acceptable(case, answer) else "-- "
                    print(f"   {mark}{case.name:28} {total:4.1f} s  {answer.strip()!r}")
    await model.aclose()


async def _ignore(piece: str) -> None:
    return None


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--forms", default=",".join(FORMS))
    parser.add_argument("--show", action="store_true", help="print every answer")
    parser.add_argument("--variants", action="store_true", help="also vary the generation")
    args = parser.parse_args()
    asyncio.run(main(args.forms.split(","), args.show, args.variants))
