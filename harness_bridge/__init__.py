"""The C2A harness side: the JSON-RPC link, turn assembly and the chat tools.

Built in its own issue; the core's `chat/deliver` envelope (core.envelope, core.wire) is
what this package will receive.
"""
