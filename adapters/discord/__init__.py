"""The Discord adapter: gateway dispatches in, core events out, through a pure `normalise`.

How Discord fills a `core.events.ChatEvent`: one message is `discord:<message id>` (a
snowflake); a thread is a channel of its own, named by its channel id, with its parent in
`parent_id`; a reply's `reply_to` and `target_author_id` come from `referenced_message`; a bulk
delete is one carrier whose `batch` holds a delete per message; a bot without the Message
Content intent gets messages blank (`content_withheld`); reactions carry no time. The plugin
(`plugin.py`) registers the adapter under the `c2a.adapters` entry point with its manifest
section (`manifest.py`) and secret shapes (`secrets.py`); its reactions are unicode.
"""

from adapters.discord.normalise import normalise

__all__ = ["normalise"]
