"""The Slack scopes this package needs: per Web API method it calls with a bot token and per bot
event the apps subscribe to, and the one line that names what an app lacks. Pure data."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "BOT_EVENT_SCOPES",
    "COMMAND_SCOPES",
    "METHOD_SCOPES",
    "REQUIRED_SCOPES",
    "scope_problem",
]

_HISTORY = frozenset({"channels:history", "groups:history", "im:history", "mpim:history"})
METHOD_SCOPES: Mapping[str, frozenset[str]] = {
    "auth.test": frozenset(),
    "chat.postMessage": frozenset({"chat:write"}),
    "chat.postEphemeral": frozenset({"chat:write"}),
    "chat.update": frozenset({"chat:write"}),
    "chat.delete": frozenset({"chat:write"}),
    "reactions.add": frozenset({"reactions:write"}),
    "reactions.remove": frozenset({"reactions:write"}),
    # Slack accepts chat:write for it in channel threads (assistant:write is for AI apps).
    "assistant.threads.setStatus": frozenset({"chat:write"}),
    "conversations.open": frozenset({"im:write"}),
    "conversations.history": _HISTORY,
    "conversations.replies": _HISTORY,
    # adapters.slack.directory: membership, user groups and display names, cached.
    "conversations.members": frozenset({"channels:read", "groups:read", "im:read", "mpim:read"}),
    "usergroups.users.list": frozenset({"usergroups:read"}),
    "users.info": frozenset({"users:read"}),
    # adapters.slack.files: a file's `url_private`, read with the bot token (chat_read_file).
    "files.url_private": frozenset({"files:read"}),
    # adapters.slack.uploads: an agent's files, shared with files_upload_v2.
    "files.getUploadURLExternal": frozenset({"files:write"}),
    "files.completeUploadExternal": frozenset({"files:write"}),
}
"""Every Web API method this package calls with a bot token, and the bot scopes it needs in
every kind of conversation."""

BOT_EVENT_SCOPES: Mapping[str, frozenset[str]] = {
    "message.channels": frozenset({"channels:history"}),
    "message.groups": frozenset({"groups:history"}),
    "message.im": frozenset({"im:history"}),
    "message.mpim": frozenset({"mpim:history"}),
    "app_mention": frozenset({"app_mentions:read"}),
    "reaction_added": frozenset({"reactions:read"}),
    "reaction_removed": frozenset({"reactions:read"}),
    "member_joined_channel": frozenset({"channels:read", "groups:read"}),
    "member_left_channel": frozenset({"channels:read", "groups:read"}),
}
"""The bot events the apps subscribe to (`adapters.slack.live.BOT_EVENTS`, with `message` per
conversation type) and the scopes Slack requires for each."""

COMMAND_SCOPES: frozenset[str] = frozenset({"commands"})
"""What the `/c2a` slash command needs (`adapters.slack.commands`). The shipped manifests ask
for it, but a start does not insist on it: an app installed before the command runs on,
without it."""

REQUIRED_SCOPES: frozenset[str] = frozenset().union(
    *METHOD_SCOPES.values(), *BOT_EVENT_SCOPES.values()
)


def scope_problem(agent: str, granted: str | None) -> str | None:
    """One line naming the scopes an agent's app lacks, from `auth.test`'s `x-oauth-scopes`
    header (comma-separated); None when nothing is missing or Slack did not say."""
    if granted is None:
        return None
    missing = REQUIRED_SCOPES - {s.strip() for s in granted.split(",")}
    if not missing:
        return None
    return (
        f"agents.{agent}: the Slack app lacks the scopes {', '.join(sorted(missing))}; "
        "add them (manifests/slack/app-manifest.yaml has them all) and reinstall the app"
    )
