"""Platform adapters: each translates native payloads into core events and never decides."""
