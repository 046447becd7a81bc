"""Attachments on an event: kept in the ledger and read back, old rows without them still read,
and what a file's bytes become for a model."""

from __future__ import annotations

from dataclasses import replace

import pytest

from core.attachments import Attachment, describe
from core.clock import parse_time
from core.codec import event_from_data, event_to_data
from core.errors import ToolError
from core.events import Author, ChatEvent, Conversation, ConversationKind, EventKind
from core.file_reading import to_content

LOG = Attachment("F1", "deploy.log", "text/plain", 28, "https://files.slack.com/files-pri/T-F1/x")
EVENT = ChatEvent(
    event_id="slack:T1:C1:1.000100",
    kind=EventKind.MESSAGE,
    platform="slack",
    workspace_id="T1",
    conversation=Conversation("C1", ConversationKind.CHANNEL),
    author=Author("U1"),
    created_at=parse_time("2026-01-01T00:00:00Z"),
    text="logs",
    files=2,
    attachments=(LOG, Attachment("F2", "x")),
)


def test_an_events_attachments_round_trip_through_the_ledger() -> None:
    data = event_to_data(EVENT)
    assert data["attachments"][1] == {"id": "F2", "name": "x"}
    assert event_from_data(data) == EVENT


def test_a_ledger_row_written_before_attachments_reads_with_none() -> None:
    data = event_to_data(replace(EVENT, attachments=()))
    assert "attachments" not in data
    assert event_from_data(data).attachments == ()


def test_a_file_is_described_by_name_type_and_size() -> None:
    assert describe(LOG) == "deploy.log, text/plain, 28 B"
    assert describe(Attachment("F", "a.bin", size=2_500_000)) == "a.bin, unknown type, 2.5 MB"


def test_text_comes_back_as_text_and_an_image_as_base64() -> None:
    assert to_content(LOG, b"exit 1\n").text == "exit 1\n"
    png = Attachment("F3", "s.png", "image/png")
    assert to_content(png, b"\x89PNG").image == "iVBORw=="
    assert to_content(Attachment("F4", "c.json", "application/json"), b"{}").text == "{}"


def test_a_file_neither_text_nor_image_is_refused_saying_why() -> None:
    with pytest.raises(ToolError, match="application/zip, neither text nor an image"):
        to_content(Attachment("F5", "a.zip", "application/zip"), b"PK")
    with pytest.raises(ToolError, match="not UTF-8 text"):
        to_content(LOG, b"\xff\xfe\x00")
