"""A complete external C2A harness in plain Python (no c2a imports): a template for any language.

It answers `initialize`, acknowledges every `chat/deliver`, and for each event it must answer
replies through the host's `chat_send_message` tool with a short receipt; everything else it
leaves alone. Run it from a manifest:

    harness: {backend: stdio, command: ["python3", "docs/examples/stdio_harness.py"]}
"""

import itertools
import json
import sys

ids = itertools.count(1)
seen = set()


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request, result):
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def call_tool(name, arguments):
    # Fire and forget: the host answers with a tool result, which this harness ignores.
    send(
        {
            "jsonrpc": "2.0",
            "id": f"h{next(ids)}",
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    )


for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    method = message.get("method")
    if method == "initialize":
        offered = message["params"].get("supportedVersions") or [
            message["params"]["protocolVersion"]
        ]
        version = max(v for v in offered if v in ("2026-06-02", "2026-06-24"))
        answer(
            message,
            {
                "protocolVersion": version,
                "serverInfo": {"name": "example-harness", "version": "1.0"},
                "capabilities": {
                    "delivery": {"ack": True},
                    "injection": {"buffered": True},
                    "chatTools": {"sendMessage": True},
                },
            },
        )
    elif method == "chat/deliver":
        event = message["params"]
        answer(message, {"accepted": True})  # acknowledge first: the host keeps the event
        if event["eventId"] in seen:
            continue  # a redelivery: never act twice
        seen.add(event["eventId"])
        if event["attention"]["policy"] == "must_respond":
            call_tool(
                "chat_send_message",
                {
                    "target": {
                        "conversation": event["conversation"]["id"],
                        "thread": event["conversation"].get("threadId"),
                    },
                    "inReplyTo": event["eventId"],
                    "text": "Received; I will look into it.",
                },
            )
