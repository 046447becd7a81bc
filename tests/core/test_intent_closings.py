"""Closings with words of their own (`core.intent_closings`): thanks for the intent rules, so a
mention that only acknowledges is `ack_only` + `notify`, while a question or a request decides
as before. English is the one language the intent tables cover."""

from __future__ import annotations

import pytest
from builders import LEAD, axes, delivered, line, run, slack_body, slack_message

from c2a.platforms import BUILTIN, installed
from core.intent import DEFAULT_RULES, Intent, IntentRules
from core.intent_closings import MAX_WORDS, is_closing

MARKUPS = {name: platform.markup for name, platform in installed().items() if name in BUILTIN}
RULES = DEFAULT_RULES.with_markup(MARKUPS)


def intents(text: str, rules: IntentRules = RULES) -> frozenset[Intent]:
    """The intents of `text` addressed to an agent, the same on every built-in platform, and
    what `has` says for each intent agreeing with them."""
    found = {name: rules.classify(f"<@{LEAD}> {text}", name) for name in MARKUPS}
    assert len(set(found.values())) == 1, found
    result = next(iter(found.values()))
    for name in MARKUPS:
        for intent in Intent:
            assert rules.has(f"<@{LEAD}> {text}", intent, name) == (intent in result), intent
    return result


CLOSINGS = {
    "going off to act": [
        "ok I'll try that",
        "ok. I will try that tonight",
        "ill try it",
        "thanks, I'll give it a go",
        "ok...let me see",
        "nice i will read about it too",
        "I'll have a look later. Thanks for the support",
        "OK, I'm going to try removing the -beta from the launcher. Wish me luck.",
        "I'm trying it now",
        "alright, will check the logs later and report back",
    ],
    "a resolution": [
        "I solved it",
        "I solved my issue with help from the #gentoo guys",
        "nevermind, found it",
        "nvm I figured it out",
        "got it working now",
        "it works now, thanks a lot!",
        "that did the trick",
        "Actually the problem was fixed after installing the packages",
        "problem solved",
        "for reference the solution was to pipe it through bzip2 first",
        "Ok, it working :D",
    ],
    "a move elsewhere": [
        "i am going to /msg you now",
        "I'll pm you",
        "pm'd you",
        "sent you a pm",
        "check your pm",
        "let's take this to private",
    ],
    "understanding or agreement": [
        "ok, I understand now",
        "Good to know. Four years is, after all, a long time.",
        "fair enough, I'll leave it as it is",
        "good point if the path is set :P",
        "i think u r right",
    ],
    "leaving": ["gotta go, thanks!", "ok I'm off, bbl", "thanks, off to bed now"],
}


@pytest.mark.parametrize(
    "text", [t for texts in CLOSINGS.values() for t in texts], ids=lambda t: t[:40]
)
def test_a_closing_with_words_is_thanks(text: str) -> None:
    assert intents(text) == {Intent.THANKS}


@pytest.mark.parametrize(
    "text",
    [
        # a question or a request wins
        "thanks, but why does the build fail?",
        "ok I'll try that, what about the logs",
        "I'll try that, can you send me the link",
        "thanks, please also check the staging logs",
        "solved it?",
        # contrast, negation, trouble, a new state
        "thanks, but it still fails",
        "ok I'll try that, but it failed before",
        "I tried that and it didn't work",
        "it worked until today",
        "it works, now I get a black screen",
        "I'll try again, same error",
        # a problem or a report, not a closing
        "I'm trying to install the nvidia driver",
        "im looking for a way to mount it",
        "fixed, the build is green",
        "fix is ready for review",
        "the fix is ready for review",
        "i found a bug in the installer",
        "working on a script for backups",
        "thanks, the fix worked on staging too",
        "thanks, done",
        "I'll try https://example.com/guide",
        "you are right, but it fails on arm",
        "good idea, I wonder if it is lightweight",
        "I'm off the network since the update",
        "I need to go through the install again",
        # a bare command keeps its own intent
        "never mind",
    ],
)
def test_a_question_request_or_report_is_not_a_closing(text: str) -> None:
    assert Intent.THANKS not in intents(text)


def test_a_long_message_is_never_a_closing() -> None:
    words = ["I'll", "try", "that"] + ["word"] * MAX_WORDS
    assert not is_closing([w.casefold() for w in words])
    assert is_closing([w.casefold() for w in words[:MAX_WORDS]])


@pytest.mark.parametrize(
    "text", ["heh.", "hehe", "bwahaha", "hahaha", "lmao", "thanks bro", "tks", "tnx!"]
)
def test_laughter_and_thanks_to_a_friend_are_thanks(text: str) -> None:
    assert intents(text) == {Intent.THANKS}


def say(second: int, text: str) -> list[str]:
    at = f"2026-01-01T00:00:{second:02d}Z"
    event = slack_message(f"{1767225600 + second}.000100", f"<@{LEAD}> {text}")
    return [line(at, "slack", slack_body(event, via="lead"), via="lead")]


@pytest.mark.parametrize(
    ("text", "decided"),
    [
        ("thanks, I'll give it a go", ("to_me", "ack_only", "notify", "thanks")),
        ("I solved my issue, cheers", ("to_me", "ack_only", "notify", "thanks")),
        ("i am going to /msg you now", ("to_me", "ack_only", "notify", "thanks")),
        (
            "thanks, but why does the build fail?",
            ("to_me", "must_respond", "buffered", "direct_mention"),
        ),
        (
            "ok I'll try that, can you send the link",
            ("to_me", "must_respond", "buffered", "direct_mention"),
        ),
    ],
)
def test_a_mention_that_only_closes_is_acknowledged_and_a_question_still_answered(
    text: str, decided: tuple[str, str, str, str]
) -> None:
    records, _, report = run(say(1, text))
    assert not report, report
    params = delivered(records)["lead"][-1]
    assert (*axes(params), params["attention"]["reason"]) == decided
