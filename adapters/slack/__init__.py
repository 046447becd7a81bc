"""The Slack adapter: turns Slack Events API payloads into core events and never decides."""

from adapters.slack.normalise import extract_mentions, normalise

__all__ = ["extract_mentions", "normalise"]
