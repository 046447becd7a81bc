"""Closings and backchannels in the `to_me_likely` band: lines that carry on a conversation
without asking the agent for anything.

The intent rules (`core.intent`) call a message thanks only when every word of it is thanks
vocabulary, which is right for a message that names the agent: `<@lead> ok, and the logs?` is
a question. A line the band only guesses is for the agent needs less: in real support chat the
partner's `ok i try`, `okay very kool thanks`, `yeah`, `hmm, right` or `hehe` were answered by
hardly ever (on the IRC corpus's tuning splits, about one such line in ten). `is_closing` tells
those: no `?`, and either a line of at most three backchannel words (`yeah`, `i see`, `hmm`,
`lol`, ...) or one that opens with an acknowledgement (`ok`, `alright`, `thanks`, `cool`, ...)
and stays short without a question word. `yes` and `no` are left out: they answer the agent's
question, which the agent may want to follow up. English only, as the intent tables are. Pure.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["is_closing"]

_BACKCHANNEL: Final = re.compile(
    r"^\W*(?:(?:ok(?:ay|ey|k)?|k|yeah?|sure|right|true|cool|nice|great|hm+|ah+|oh+|aw+|lol"
    r"|he(?:he)+h?|ha(?:ha)+|i\s?c|i see|same thing|np|thx|ty|sorry|gosh|damn|wow|indeed"
    r"|alright|fine|good|heh)\W*){1,3}$",
    re.IGNORECASE,
)
# An acknowledgement first, then a few words that ask nothing: "ok I'll give that a go, thanks".
_OPENS_WITH_ACK: Final = re.compile(
    r"^\W*(?:ok(?:ay|ey|k)?|k|alright|thanks|thank you|thx|tnx|ty|cool|great|nice)\b"
    r"(?!.*\b(?:what|how|why|where|which|when|who)\b)[^?]{0,40}$",
    re.IGNORECASE,
)


def is_closing(text: str) -> bool:
    """Whether a line the band guessed is for the agent only acknowledges: no turn is owed."""
    if "?" in text or len(text) > 64:
        return False
    return _BACKCHANNEL.match(text) is not None or _OPENS_WITH_ACK.match(text) is not None
