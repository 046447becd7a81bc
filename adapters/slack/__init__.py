"""The Slack adapter: turns Slack Events API payloads into core events and never decides.

How Slack fills a `core.events.ChatEvent`: one message is `slack:<team>:<channel>:<ts>`
whichever app's connection delivered it and however often Slack retried; `message_id` is its
`ts` (unique per channel); a thread is named by its root's `ts`; a DM of more than two people
(`mpim`) is a group; a Slack Connect user is external; `bot_user_id` comes from
`authorizations`, `delivery_id` from `event_id`, `target_author_id` of a reaction from
`item_user`; an `app_mention` names its receiver; "also send to channel" is `also_in_channel`;
`<!here>`, `<!channel>` and `<!everyone>` are broadcasts. The plugin (`plugin.py`) registers
the adapter under the `c2a.adapters` entry point with its reactions (`glyphs.py`), manifest
section (`manifest.py`) and secret shapes (`secrets.py`).
"""

from adapters.slack.normalise import extract_mentions, normalise

__all__ = ["extract_mentions", "normalise"]
