"""The web chat: a local chat platform served on 127.0.0.1, with the attention model shown."""
