"""What one raw gateway message becomes for a connection (`adapters.discord.frames`), pure."""

from __future__ import annotations

from typing import Any

from adapters.discord.frames import Item, to_item, withheld
from adapters.discord.normalise import CONTENT_MARK
from core.store import GatewaySession

URL = "wss://gateway.example/"
KEPT = GatewaySession("lead", -1, "s-old", URL, 41, "2026-11-22T14:00:00.000000Z")


def dispatch(name: str, seq: int = 42, **data: Any) -> dict[str, Any]:
    return {"op": 0, "t": name, "s": seq, "d": data}


def item(frame: object, guild_id: str | None = None, session: object = "s-new") -> Item | None:
    return to_item(frame, "lead", -1, session, URL, {-1: KEPT}, guild_id)


def test_a_message_of_the_bots_guild_is_handed_over_with_the_mark_it_moves_the_session_to() -> None:
    frame = dispatch("MESSAGE_CREATE", guild_id="G111", id="1")
    assert item(frame, guild_id="G111") == Item(
        frame, GatewaySession("lead", -1, "s-new", URL, 42, "")
    )


def test_a_message_of_another_guild_only_moves_the_session() -> None:
    found = item(dispatch("MESSAGE_CREATE", guild_id="G222"), guild_id="G111")
    assert found is not None and found.frame is None and found.mark.seq == 42


def test_a_dispatch_the_normaliser_does_not_read_only_moves_the_session() -> None:
    found = item(dispatch("PRESENCE_UPDATE"))
    assert found is not None and found.frame is None


def test_the_ready_of_a_session_that_replaced_a_kept_one_catches_up_from_its_last_commit() -> None:
    ready = dispatch("READY", 1, session_id="s-new", resume_gateway_url=URL)
    assert item(ready) == Item(
        None, GatewaySession("lead", -1, "s-new", URL, 1, ""), KEPT.updated_at
    )


def test_resuming_the_kept_session_catches_nothing_up() -> None:
    found = item(dispatch("RESUMED", 42), session="s-old")
    assert found is not None and found.catch_up_since is None


def test_what_is_no_dispatch_or_has_no_resumable_sequence_is_nothing() -> None:
    assert item({"op": 11}) is None
    assert item(["not", "an", "object"]) is None
    assert item(dispatch("MESSAGE_CREATE", 0)) is None
    assert item(dispatch("MESSAGE_CREATE", 1 << 63)) is None
    assert item(dispatch("MESSAGE_CREATE"), session=None) is None


def test_only_text_dispatches_are_marked_withheld() -> None:
    assert withheld(dispatch("MESSAGE_CREATE"))[CONTENT_MARK] == "withheld"
    assert CONTENT_MARK not in withheld(dispatch("MESSAGE_DELETE"))
