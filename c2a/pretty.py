"""One readable line per output record, for people watching a replay (`c2a replay --pretty`)."""

from __future__ import annotations

from c2a.records import Record

__all__ = ["render_pretty"]

_PREVIEW = 60


def render_pretty(record: Record) -> str:
    """`agent  what  decision  reason  event  "text"`; a knock's text is never shown."""
    body = record.body
    agent = f"{record.agent:<12}"
    if record.kind == "outbound":
        return f"{agent} react {body['signal']} ({body['emoji']}) on {body['eventId']}\n"
    if record.kind == "turn":
        ids = ", ".join(body["eventIds"])
        return f"{agent} turn ({body['mode']}) at {body['at']}: {ids}\n"
    if record.kind == "escalation":
        return f"{agent} escalation {body['reason']} in {body['conversation']}\n"
    method = body["method"]
    params = body["params"]
    if method != "chat/deliver":
        return (
            f"{agent} {method} {params.get('eventId', params.get('authorId', ''))} "
            f"{params.get('reason', '')}\n"
        )
    attention = params["attention"]
    axes = "/".join(
        (params["target"]["directedness"], attention["policy"], params["injection"]["mode"])
    )
    claim = f" claimed by {attention['claimedBy']}" if "claimedBy" in attention else ""
    text = ""
    for part in params["content"]:
        if part["type"] == "text":
            flat = " ".join(part["text"].split())
            text = flat if len(flat) <= _PREVIEW else flat[: _PREVIEW - 1] + "…"
    shown = f' "{text}"' if text else ""
    return f"{agent} {axes:<40} {attention['reason']:<22}{claim}{shown}\n"
