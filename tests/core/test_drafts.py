"""Which replies a stopped process left cut short, read from the outbox's newest actions."""

from __future__ import annotations

from typing import Any

from core.drafts import CUT_KEY, WRITING, cut_replies
from core.store_records import OutboxEntry


def post(key: str, text: str, status: str = "sent", *, writing: bool | None = True) -> OutboxEntry:
    """A post as the outbox records it: `writing` as a streamed reply's first words say (None:
    a record from before posts said so)."""
    action: dict[str, Any] = {"action": "send", "text": text}
    if writing is not None:
        action["writing"] = writing and text.endswith(WRITING)
    return OutboxEntry(key, "lead", action, status, 1, _landed(status))


def edit(key: str, text: str, status: str = "sent", *, draft: bool = False) -> OutboxEntry:
    action = {"action": "edit", "text": text, "draft": draft}
    return OutboxEntry(key, "lead", action, status, 1, _landed(status))


def _landed(status: str) -> dict[str, Any] | None:
    return {"messageId": "m1"} if status == "sent" else None


def test_a_marked_post_with_no_final_edit_is_cut_with_the_text_it_showed_last() -> None:
    entries = [
        post("k", "The" + WRITING),
        edit("k:draft:1", "The deploy" + WRITING, draft=True),
        edit("k:draft:2", "The deploy is" + WRITING, "pending", draft=True),  # never showed
    ]
    [cut] = cut_replies(entries)
    assert (cut.post.key, cut.text, cut.shown) == ("k", "The deploy", True)


def test_a_post_never_sent_is_cut_but_was_never_shown() -> None:
    [cut] = cut_replies([post("k", "The" + WRITING, "pending")])
    assert (cut.text, cut.shown) == ("The", False)


def test_a_finished_reply_a_whole_message_or_one_that_may_have_landed_is_not_cut() -> None:
    assert (
        cut_replies([post("k", "The" + WRITING), edit("k:edit:ab12", "The deploy is green.")]) == []
    )
    assert cut_replies([post("k", "The" + WRITING), edit("k" + CUT_KEY, "The [cut short]")]) == []
    assert cut_replies([post("k", "The deploy is green.")]) == []
    assert cut_replies([post("k", "The" + WRITING, "ambiguous")]) == []


def test_a_whole_answer_that_ends_like_the_mark_is_not_cut() -> None:
    """A model may end its own answer with ` …`: taken for a cut reply at the next start, it
    would be finished as cut short and its question asked again, answered twice."""
    assert cut_replies([post("k", "Let me look into it" + WRITING, writing=False)]) == []
    # A post recorded before posts said whether they were being written goes by its mark.
    [cut] = cut_replies([post("k", "The" + WRITING, writing=None)])
    assert cut.text == "The"
