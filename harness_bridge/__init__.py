"""The C2A harness side and the link to it: transports, JSON-RPC, sessions, delivery with
acknowledgement, the mailbox, turn assembly, prompts, the chat tools and the backends."""
