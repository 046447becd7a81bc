"""Asking people to approve what an agent is about to do, on the host's engine.

`ask` is `AgentPort.ask` behind the port: the request becomes an `Ask` (a message with
choices) in the conversation of the event whose turn asked, in reply to it; the answer is the
first press of one of the agent's approvers (`core.approvals`), or a refusal when nobody
answers within the agent's `approval_timeout_s`, or at once when the agent has no approvers.
The message is then redrawn to say who decided what and when. The request and its answer are
both in the audit log.

What an agent asks is its own words (a tool's title is often the command it would run), so the
question is bounded before any platform sees it: its text cut at `TEXT_CHARS`, its choices at
`MAX_CHOICES` (a row of buttons on every platform).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Final

from core.actions import Ask, Choice
from core.approvals import Verdict, outcome_line
from core.clock import format_time
from core.errors import ToolError

if TYPE_CHECKING:
    from core.engine import Engine

__all__ = ["MAX_CHOICES", "TEXT_CHARS", "Approval", "ask"]

TEXT_CHARS: Final = 1_500
"""The most characters of an approval's text people are shown; a longer one ends in `…`."""
MAX_CHOICES: Final = 5
"""The most choices a question offers; the agent's first ones are kept."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Approval:
    """What an agent asks leave for: `text` says what it wants to do, in the turn answering
    `event_id`; `choices` are the buttons (at least one allows, one refuses)."""

    event_id: str
    text: str
    choices: tuple[Choice, ...]


async def ask(engine: Engine, agent: str, approval: Approval) -> Verdict:
    """The verdict on `approval` (see the module doc). Raises ToolError when the event is
    unknown to the ledger."""
    event = await engine.event(approval.event_id)
    if event is None:
        raise ToolError(f"no event {approval.event_id!r} to ask in")
    request = secrets.token_hex(8)
    detail = {"request": request, "event": approval.event_id, "text": approval.text}
    await _audit(engine, agent, "asked", detail)
    approvers = engine.approvals.approvers.get(agent, ())
    if not approvers:
        verdict = Verdict(None, engine.clock.now())
        await _audit(engine, agent, "refused", {**detail, "why": "the agent has no approvers"})
        return verdict
    conversation = event.conversation
    question = Ask(
        agent=agent,
        platform=event.platform,
        conversation=conversation.id,
        key=f"{approval.event_id}:{agent}:ask:{request}",
        request=request,
        text=_bounded(approval.text),
        choices=approval.choices[:MAX_CHOICES],
        thread=conversation.thread_id,
        in_reply_to=approval.event_id,
    )
    within = timedelta(seconds=engine.workspace.manifest.agents[agent].approval_timeout_s)
    engine.approvals.open(request, agent, question.choices, within)
    await _queue(engine, question)
    verdict = await engine.approvals.wait(request)
    outcome = "allowed" if verdict.allowed else "refused"
    answer = {"choice": verdict.choice.id if verdict.choice else None, "by": verdict.by}
    await _audit(engine, agent, outcome, {**detail, **answer})
    await _close(engine, question, verdict)
    return verdict


def _bounded(text: str) -> str:
    return text if len(text) <= TEXT_CHARS else text[: TEXT_CHARS - 1] + "…"


async def _close(engine: Engine, question: Ask, verdict: Verdict) -> None:
    """Redraw the asked message with the verdict, once it has landed."""
    entry = await engine.store.outbox_get(question.key)
    message_id = (entry.result or {}).get("messageId") if entry is not None else None
    if not message_id:
        return
    closed = Ask(
        agent=question.agent,
        platform=question.platform,
        conversation=question.conversation,
        key=f"{question.key}:decided",
        request=question.request,
        text=question.text,
        thread=question.thread,
        in_reply_to=question.in_reply_to,
        message_id=str(message_id),
        outcome=outcome_line(verdict),
    )
    await _queue(engine, closed)


async def _queue(engine: Engine, action: Ask) -> None:
    async with engine.transaction():
        await engine.queue_action(action, format_time(engine.clock.now()))


async def _audit(engine: Engine, agent: str, outcome: str, detail: Mapping[str, object]) -> None:
    clean = engine.redactor.data(detail)
    async with engine.transaction():
        await engine.store.audit(agent, "approval", outcome, clean, format_time(engine.clock.now()))
