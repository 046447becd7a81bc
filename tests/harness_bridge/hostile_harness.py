"""An external C2A harness for tests that breaks the protocol on purpose (plain Python, no c2a
imports, like docs/examples/stdio_harness.py).

Usage: python hostile_harness.py MODE [RECORD]

It answers `initialize` and acknowledges every `chat/deliver`, except as MODE says:

- `bad-error-code`: the first `chat/deliver` is answered with an error whose code is a string;
  each must-respond event gets a short `chat_send_message` reply.
- `long-text`: each must-respond event gets a 40,000-character non-ASCII reply (about 240 KB
  once JSON escapes it).
- `garbage`: right after `initialize`, one line of each kind in `GARBAGE`, then a `tools/list`
  request with id "after"; every answer from the host is appended to the file RECORD.
- `stderr-flood`: before answering `initialize`, writes lines, control characters and one
  1 MB line (over 2 MB in all) to stderr, which blocks a host that does not read it.
"""

import json
import sys

MODE = sys.argv[1]
RECORD = sys.argv[2] if len(sys.argv) > 2 else None

GARBAGE = [
    b"{this is not json",
    b"\xff\xfe not utf-8",
    b'"\\ud800 a lone surrogate"',
    b"[" * 2000 + b"]" * 2000,
    b"[]",
    b'[{"jsonrpc": "2.0", "id": "b1", "method": "tools/list"}]',
    b"42",
    b'{"jsonrpc": "1.0", "id": "g1", "method": "tools/list"}',
    b'{"jsonrpc": "2.0", "id": "g2", "method": 7}',
    b'{"jsonrpc": "2.0", "id": [1], "method": "tools/list"}',
    b'{"jsonrpc": "2.0", "id": true, "method": "tools/list"}',
    b'{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}',
    b'{"jsonrpc": "2.0", "id": "g3", "method": "no/such/method"}',
    b'{"jsonrpc": "2.0", "id": "g4", "method": "tools/list", "params": [1]}',
    b'{"jsonrpc": "2.0", "id": 99, "error": {"code": "x", "message": "stray"}}',
    b'{"jsonrpc": "2.0", "id": 99}',
    b'{"not": "json-rpc"}',
    b'{"jsonrpc": "1.0", "id": "g5", "method": "tools/list", "x": '
    + b"[" * 1000
    + b"]" * 1000
    + b"}",
    b'{"jsonrpc": "2.0", "id": "big", "method": "tools/list", "p": "' + b"x" * (5 << 20) + b'"}',
]


def send(message):
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def answer(request, result):
    send({"jsonrpc": "2.0", "id": request["id"], "result": result})


def reply(event, text):
    send(
        {
            "jsonrpc": "2.0",
            "id": f"reply-{event['eventId']}",
            "method": "tools/call",
            "params": {
                "name": "chat_send_message",
                "arguments": {
                    "target": {
                        "conversation": event["conversation"]["id"],
                        "thread": event["conversation"].get("threadId"),
                    },
                    "inReplyTo": event["eventId"],
                    "text": text,
                },
            },
        }
    )


def initialized(request):
    if MODE == "stderr-flood":
        for n in range(1000):
            sys.stderr.write(f"flood line {n} " + "y" * 1000 + "\n")
        sys.stderr.write("escape \x1b[2J and \r carriage\n")
        sys.stderr.write("z" * (1 << 20) + "\n")
        sys.stderr.write("flood done\n")
        sys.stderr.flush()
    answer(
        request,
        {
            "protocolVersion": request["params"]["protocolVersion"],
            "serverInfo": {"name": "hostile-harness", "version": "1.0"},
            "capabilities": {"delivery": {"ack": True}, "injection": {"buffered": True}},
        },
    )
    if MODE == "garbage":
        for line in GARBAGE:
            sys.stdout.buffer.write(line + b"\n")
        sys.stdout.buffer.flush()
        send({"jsonrpc": "2.0", "id": "after", "method": "tools/list"})


delivered = 0
for line in sys.stdin:
    message = json.loads(line)
    method = message.get("method")
    if method is None and RECORD is not None:
        with open(RECORD, "a", encoding="utf-8") as record:
            record.write(line)
    if method == "initialize":
        initialized(message)
    elif method == "chat/deliver":
        event = message["params"]
        delivered += 1
        if MODE == "bad-error-code" and delivered == 1:
            send({"jsonrpc": "2.0", "id": message["id"], "error": {"code": "E1", "message": "no"}})
            continue
        answer(message, {"accepted": True})
        if event["attention"]["policy"] != "must_respond":
            continue
        if MODE == "bad-error-code":
            reply(event, "Received after a bad error code.")
        elif MODE == "long-text":
            reply(event, "жё" * 20_000)
