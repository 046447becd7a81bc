"""The platform-free attention core: events, decisions, the ledger and the workspace manifest.

Nothing in this package imports `adapters` or `harness_bridge`; a test reads the imports.
"""
