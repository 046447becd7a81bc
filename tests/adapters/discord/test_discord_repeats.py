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
