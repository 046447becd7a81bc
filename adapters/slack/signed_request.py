"""One HTTP Events API request, checked before bolt sees it: its size, its signature, its body.

Bolt parses a request's body, and reads fields out of it, before it checks the signature, and
slack-sdk's verifier reads the timestamp header with a bare `int()`: left to them, a malformed
or unsigned POST ends in a 500 and a traceback. `read_signed` refuses every such request with a
`PayloadError` whose `details["status"]` is the HTTP answer: 413 for a body past
`MAX_BODY_BYTES`; 401 for signature headers that are missing, malformed, stale or wrong (checked
with slack-sdk's `SignatureVerifier`, as bolt does); 400 for a body that is not UTF-8 (its
signature cannot even be checked: slack-sdk signs text) or, signed, is not a JSON object in the
Events API's shape. A form is either an interactive request (a button pressed: its `payload`
field is a JSON object checked the same way) or a slash command (a `command` and a `user_id`).
What passes is handed to bolt as the request it would have built itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final
from urllib.parse import parse_qsl

import orjson
from aiohttp import web
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

from core.errors import PayloadError

__all__ = ["MAX_BODY_BYTES", "read_signed"]

MAX_BODY_BYTES: Final = 1 << 20
"""An Events API body is a few kilobytes (a message is at most 40,000 characters); a megabyte is
more than any of them and little enough to hold while the signature is checked."""

# A Unix time in seconds has ten digits until the year 2286.
_TIMESTAMP_DIGITS: Final = 12
_TIMESTAMP: Final = "X-Slack-Request-Timestamp"
_SIGNATURE: Final = "X-Slack-Signature"
_FORM: Final = "application/x-www-form-urlencoded"


async def read_signed(request: web.Request, verifier: SignatureVerifier) -> AsyncBoltRequest:
    """The bolt request for `request`, once it is known to be signed, small and well formed.

    Raises `PayloadError` (details: `status`, the HTTP status to answer; `field`, what is wrong)
    for anything else; nothing reaches bolt before its signature has been verified.
    """
    raw = await _body(request)
    timestamp = request.headers.get(_TIMESTAMP, "")
    signature = request.headers.get(_SIGNATURE, "")
    if not (timestamp.isascii() and timestamp.isdecimal() and len(timestamp) <= _TIMESTAMP_DIGITS):
        raise _refused(401, _TIMESTAMP, "is missing or not a Unix time")
    if not signature:
        raise _refused(401, _SIGNATURE, "is missing")
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise _refused(400, "body", "is not UTF-8") from None
    if not verifier.is_valid(body=text, timestamp=timestamp, signature=signature):
        raise _refused(401, _SIGNATURE, "does not match, or the request is over five minutes old")
    _check_body(text, request.content_type)
    headers: dict[str, str | Sequence[str]] = {
        name: request.headers.getall(name) for name in request.headers
    }
    try:
        return AsyncBoltRequest(body=text, query=request.query_string, headers=headers)
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
        # bolt reads ids out of many places of a body, each in its own way; a signed body it
        # cannot read is a malformed one, not our failure.
        raise _refused(
            400, "body", f"cannot be read by slack-bolt ({type(exc).__name__})"
        ) from None


def _check_body(text: str, content_type: str) -> None:
    """A verified body is an Events API JSON object or a form: an interactive request whose
    `payload` field is such an object, or a slash command."""
    if content_type != _FORM:
        _check_shape(_json(text))
        return
    form = dict(parse_qsl(text, keep_blank_values=True))
    if "payload" in form:
        _check_shape(_json(form["payload"]))
    elif not form.get("command", "").startswith("/") or not form.get("user_id"):
        raise _refused(400, "body", "is neither a button press nor a slash command's form")


def _json(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        raise _refused(400, "body", "is not JSON") from None


async def _body(request: web.Request) -> bytes:
    """The request's body, refused as soon as it is known to be past `MAX_BODY_BYTES`."""
    length = request.content_length
    if length is not None and length > MAX_BODY_BYTES:
        raise _refused(413, "body", f"is over {MAX_BODY_BYTES:,} bytes")
    try:
        raw = await request.read()
    except web.HTTPRequestEntityTooLarge:  # past the server's own `client_max_size`
        raise _refused(413, "body", "is over the server's limit") from None
    if len(raw) > MAX_BODY_BYTES:
        raise _refused(413, "body", f"is over {MAX_BODY_BYTES:,} bytes")
    return raw


def _check_shape(body: Any) -> None:
    """What bolt takes for granted in an Events API body: an object with a string `type`, and
    for an `event_callback` an `event` object with a string `type` and a list of authorization
    objects, if any."""
    if not isinstance(body, dict):
        raise _refused(400, "body", "is not a JSON object")
    if not isinstance(body.get("type"), str):
        raise _refused(400, "type", "is not a string")
    if body["type"] != "event_callback":
        return
    event = body.get("event")
    if not isinstance(event, Mapping) or not isinstance(event.get("type"), str):
        raise _refused(400, "event", "is not an event object with a string type")
    authorizations = body.get("authorizations", [])
    if not isinstance(authorizations, list) or not all(
        isinstance(item, Mapping) for item in authorizations
    ):
        raise _refused(400, "authorizations", "is not a list of objects")


def _refused(status: int, field: str, problem: str) -> PayloadError:
    where = "the request body" if field == "body" else f"'{field}'"
    return PayloadError(
        f"Slack request refused: {where} {problem}", details={"status": status, "field": field}
    )
