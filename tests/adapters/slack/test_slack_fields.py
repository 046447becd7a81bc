"""Checked reads of a Slack payload's fields (`adapters.slack.fields`): errors name the field."""

from __future__ import annotations

import pytest

from adapters.limits import MAX_NAME
from adapters.slack.fields import (
    mapping,
    optional_list,
    optional_mapping,
    optional_str,
    required_str,
)
from core.errors import PayloadError


def field_of(error: pytest.ExceptionInfo[PayloadError]) -> str:
    return str(error.value.details["field"])


def test_a_present_string_is_read_and_an_absent_or_null_one_is_none() -> None:
    assert optional_str({"ts": "1.2"}, "ts", "event") == "1.2"
    assert optional_str({"ts": None}, "ts", "event") is None
    assert optional_str({}, "ts", "event") is None


@pytest.mark.parametrize(
    ("body", "where", "field"),
    [
        ({"ts": 1}, "event", "event.ts"),
        ({"ts": "x" * (MAX_NAME + 1)}, "event.message", "event.message.ts"),
        ({"ts": ""}, "event", "event.ts"),
        ({}, "", "ts"),
    ],
)
def test_a_required_string_that_is_wrong_names_its_dotted_path(
    body: dict[str, object], where: str, field: str
) -> None:
    with pytest.raises(PayloadError) as error:
        required_str(body, "ts", where)
    assert field_of(error) == field


def test_objects_and_lists_are_checked_as_they_are_read() -> None:
    assert optional_mapping({}, "edited", "event.message") is None
    assert optional_list({}, "files", "event") == []
    with pytest.raises(PayloadError) as error:
        mapping({"message": []}, "message", "event")
    assert field_of(error) == "event.message"
    with pytest.raises(PayloadError) as error:
        optional_list({"files": {}}, "files", "event")
    assert field_of(error) == "event.files"
