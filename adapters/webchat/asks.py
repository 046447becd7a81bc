"""Questions with buttons on the web chat (`core.actions.Ask`), and their answers.

An ask is posted as the agent's message, and its buttons are kept beside it (`Asks`, shown
on every open page as an `ask` frame and in `hello`); once decided, the message is edited to
say who decided what and when, and its buttons go. A press is `POST /approve` with
`{"as": person, "request": ..., "choice": ...}`, behind the same access guard as every other
request of the page: 200 when it decided, 403 with the refusal to show when the person is not
an approver (or not one of the people here), 409 when the question is no longer open.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from adapters.webchat.normalise import PLATFORM
from core.actions import Ask
from core.approvals import Approvals, Press, Pressed

__all__ = ["Asks", "press_handler"]

Broadcast = Callable[[dict[str, Any]], Awaitable[None]]


class Asks:
    """The buttons of the open questions on the page: message id → its `ask` frame."""

    def __init__(self) -> None:
        self.open: dict[str, dict[str, Any]] = {}

    def shown(self, message_id: str, action: Ask) -> dict[str, Any]:
        """The frame showing (or, once decided, clearing) an ask's buttons."""
        choices = [{"id": c.id, "label": c.label, "allow": c.allow} for c in action.choices]
        frame = {"op": "ask", "id": message_id, "request": action.request, "choices": choices}
        if action.outcome is None:
            self.open[message_id] = frame
        else:
            self.open.pop(message_id, None)
        return frame


def press_handler(
    approvals: Approvals | None, humans: list[str]
) -> Callable[[web.Request], Awaitable[web.Response]]:
    """The `POST /approve` handler (see the module doc)."""

    async def pressed(request: web.Request) -> web.Response:
        try:
            body = await request.json()
            user, asked, choice = (str(body[k]) for k in ("as", "request", "choice"))
        except (ValueError, RecursionError, KeyError, TypeError):
            return web.json_response(
                {"refused": "a press names as, request and choice"}, status=400
            )
        if user not in humans:
            return web.json_response(
                {"refused": f"{user!r} is not one of the people here"}, status=403
            )
        if approvals is None:
            return web.json_response({"refused": "nothing is asked here"}, status=409)
        outcome = approvals.press(Press(request=asked, choice=choice, platform=PLATFORM, user=user))
        if outcome is Pressed.NOT_APPROVER:
            agent = approvals.agent_of(asked)
            refusal = f"{user}, only {agent}'s approvers can answer this."
            return web.json_response({"refused": refusal}, status=403)
        if outcome is Pressed.CLOSED:
            return web.json_response({"refused": "this question is no longer open"}, status=409)
        return web.json_response({"decided": choice})

    return pressed
