"""The C2A harness side: the JSON-RPC link, turn assembly and chat tools (built in its own issue)."""
