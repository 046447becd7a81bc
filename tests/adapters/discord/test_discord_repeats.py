"""The key that tells one Discord message's copies apart before they are normalised: only a
created message whose text every copy carries has one."""

from __future__ import annotations

from typing import Any

import pytest

from adapters.discord.normalise import CONTENT_MARK
from adapters.discord.repeats import repeat_key


def created(**data: Any) -> dict[str, Any]:
    message = {"id": "1300000000000000001", "channel_id": "820000000000000001", "content": "hi"}
    return {"op": 0, "t": "MESSAGE_CREATE", "s": 7, "d": {**message, **data}}


def test_every_bots_copy_of_one_created_message_shares_its_key() -> None:
    assert (
        repeat_key(created())
        == repeat_key({**created(), "s": 9})
        == ("MESSAGE_CREATE 1300000000000000001")
    )
    assert repeat_key(created(id="1300000000000000002")) != repeat_key(created())


@pytest.mark.parametrize(
    "dispatch",
    [
        {**created(), "t": "MESSAGE_UPDATE"},
        {**created(), CONTENT_MARK: "withheld"},
        created(content=""),
        created(id=1300000000000000001),
        {**created(), "d": None},
        {**created(), "op": 1},
    ],
    ids=["update", "withheld", "no-text", "number-id", "no-data", "not-a-dispatch"],
)
def test_a_copy_that_may_differ_from_the_others_has_no_key(dispatch: dict[str, Any]) -> None:
    assert repeat_key(dispatch) is None


def reaction(t: str = "MESSAGE_REACTION_ADD", **data: Any) -> dict[str, Any]:
    change = {
        "user_id": "810000000000000001",
        "message_id": "1300000000000000011",
        "channel_id": "820000000000000001",
        "emoji": {"id": None, "name": "👍"},
        "guild_id": "800000000000000001",
    }
    return {"op": 0, "t": t, "s": 9, "d": {**change, **data}}


def test_every_bots_copy_of_one_reaction_change_shares_its_key() -> None:
    assert repeat_key(reaction()) == repeat_key({**reaction(), "s": 12}) is not None
    others = [
        reaction("MESSAGE_REACTION_REMOVE"),
        reaction(user_id="810000000000000002"),
        reaction(emoji={"id": None, "name": "✅"}),
        reaction(message_id="1300000000000000012"),
        reaction(member={"user": {"id": "810000000000000001"}, "nick": "al"}),
    ]
    keys = {repeat_key(r) for r in [reaction(), *others]}
    assert None not in keys
    assert len(keys) == 1 + len(others)  # whatever a copy says differently, it is no repeat


@pytest.mark.parametrize(
    "dispatch",
    [
        {**reaction(), CONTENT_MARK: "withheld"},
        reaction(user_id=1 << 70),  # past what JSON holds: the normaliser says why
        {**reaction(), "d": None},
        {**reaction(), "op": 1},
        {**reaction(), "t": "TYPING_START"},
    ],
    ids=["marked", "past-64-bits", "no-data", "not-a-dispatch", "not-a-reaction"],
)
def test_a_reaction_the_key_cannot_vouch_for_has_none(dispatch: dict[str, Any]) -> None:
    assert repeat_key(dispatch) is None
