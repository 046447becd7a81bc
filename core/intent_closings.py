"""Closings with words of their own: acknowledgements and reports that ask the agent nothing.

The thanks vocabulary (`core.intent_tables`) must cover a whole message, so `thanks, that fixed
it` is thanks but `ok I'll give it a go tonight` is not. In a support channel the second kind
is as common as the first and needs no answer either (a reaction at most). A message is such a
*closing* when, after any acknowledgements and thanks (`ok`, `yeah`, `got it`, `thanks for the
tip`, ...), it opens with one of these classes and stays short:

- understanding or agreement: `i understand now`, `good to know, ...`, `fair enough, ...`,
  `good point, ...`, `i think you're right`;
- leaving: `I'm outta here`, `gotta go`, `off to bed`, `bbl`;
- going off to act on what was said: `I'll try that`, `ok, will read about it`, `let me see`,
  `I'm going to try removing ...`, `I'm trying it now` (not `I'm trying to ...`, a problem);
- a resolution: `I solved it`, `nevermind, found it`, `got it working now`, `it works now`,
  `that did the trick`, `the problem was fixed after ...`, `problem solved`, `for reference
  the solution was ...`;
- a move elsewhere: `I'll /msg you`, `pm'd you`, `sent you a pm`, `check your pm`.

Thanks followed by anything else stays what it was (`thanks, the fix worked on staging too`,
`thanks, done`): only these openings let free words follow. Those words (`MAX_WORDS` in all)
must carry none of `BLOCKERS`: a contrast (`but`, `still`, `until`), a negation (`not`,
`didn't`), a question word (`what`, `how`, ...), a sign of trouble (`error`, `fails`, `same`,
`says`) or a link or code; nor `now` before a subject (a new state: `it works, now I get a
black screen`). So `ok I'll try that, but it failed before` and `I'll try, what about the logs`
stay what they were. The caller (`core.intent`) also requires no `?` and no other intent: a
question or a request always wins. English, as the intent tables are. Pure.
"""

from __future__ import annotations

import re
from typing import Final

from core.markup import PLACEHOLDER

__all__ = ["BLOCKERS", "MAX_WORDS", "is_closing"]

MAX_WORDS: Final = 20

# Any of these words anywhere keeps a message from being a closing.
BLOCKERS: Final = frozenset(
    {
        # contrast
        "but", "though", "although", "however", "except", "unless", "still", "anymore",
        "instead", "until", "till", "til",
        # negation
        "not", "no", "never", "nothing", "none", "nobody", "nowhere", "cannot", "cant", "wont",
        "dont", "doesnt", "didnt", "isnt", "wasnt", "arent", "werent", "couldnt", "wouldnt",
        "shouldnt", "havent", "hasnt", "aint",
        # question words
        "what", "why", "how", "where", "which", "who", "whom", "whose", "when", "whether",
        # trouble
        "error", "errors", "fail", "fails", "failed", "failing", "failure", "broken", "broke",
        "crash", "crashes", "crashed", "stuck", "wrong", "same", "says", "said", "shows",
        "gives", "complains", "warning", "denied", "missing", "break",
        # a link or code: content (`core.markup.PLACEHOLDER`)
        PLACEHOLDER,
    }
)  # fmt: skip

# Acknowledgements, thanks and fillers that may come before the opening.
_THANK = (
    r"(?:thanks|thank you|thank u|thankyou|thx|thnx|thanx|tks|tnx|ty|cheers|thaa+nks+"
    r"|thanks{2,})(?:\s+(?:a lot|so much|very much|again|much))?"
    r"(?:\s+for\s+(?:the|your|that|this|all)(?:\s+\w+)?)?"
)
_LEAD = (
    r"(?:(?:ok|okay|okey|k|kk|alright|yeah|yea|yes|yep|yup|cool|nice|great|right|sure|fine"
    r"|oh|ah|o|so|well|then|hmm|hm|actually|again|anyway|now|got it|gotcha|understood"
    rf"|{_THANK})\s+)*"
)
_I_WILL = (
    r"(?:i'll|ill|i will|i'm going to|im going to|i am going to|i'm gonna|im gonna|gonna"
    r"|going to|let me|lemme|will|i'll have to|i might|might|i'd better|i better)"
)
_ACT = (
    r"(?:try|test|check|look|read|see|give|have a look|take a look|do that|do it|install"
    r"|reinstall|run|use|google|search|reboot|restart|confirm|experiment|play|fiddle|figure"
    r"|ask|update|upgrade|research|investigate|dig|download|grab|get back|come back"
    r"|report back|think|consider)"
)
_ACTING = (
    r"(?:trying|testing|checking|reading|looking|rebooting|restarting|installing|reinstalling"
    r"|downloading|updating|upgrading|googling|searching)"
)
_DONE = r"(?:solved|fixed|sorted|resolved)"
_MESSAGE = r"(?:msg|pm|dm|query|privmsg|private message|message)"
_YOU = r"(?:you|u)"
_WE = r"(?:i|i've|ive|i have|we|we've)"
_NEVERMIND = r"(?:never\s?mind|nvm|nm)"
# What may follow `I'm off` or `gotta go` (not `I'm off the network`, `need to go through it`).
_GONE = (
    r"(?=$|\s+(?:now|then|for|to|home|bbl|brb|bye|see|thanks|thx|ty|later|cya|cheers|night"
    r"|good))"
)
_SUBJECT = r"(?:it|it's|its|that|that's|thats|this|everything|all|which|it all)"

_OPENINGS: Final = (
    # understanding or agreement
    r"(?:i understand|i get it|noted|note made|good to know|makes sense|that makes sense"
    r"|fair enough|good point|fair point|good idea|agreed"
    r"|(?:i think\s+)?(?:you're|youre|you are|u r|ur|u are|you were|u were)\s+right)",
    # leaving
    rf"(?:(?:i'm|im|i am)\s+(?:off|outta here|out of here|leaving|heading out)|(?:gotta|got to"
    rf"|have to|i have to|need to|i need to|must)\s+go){_GONE}|(?:going|off) to (?:bed|sleep)"
    r"|bbl|brb",
    # going off to act on it
    rf"{_I_WILL}\s+(?:(?:go|just|now|first)\s+)?{_ACT}",
    # `I'm trying it now`, but not `I'm trying to install ...`, which states a problem.
    rf"(?:i'm|im|i am|am)\s+(?:now\s+)?{_ACTING}(?:\s+(?:it|that|this|them|these|those|now)|$)",
    # a resolution
    # (a bare `fixed, the build is green` reports a state rather than closes)
    rf"(?:{_NEVERMIND}\s+)?{_WE}\s+(?:just\s+)?{_DONE}",
    rf"(?:{_NEVERMIND}\s+)?(?:{_WE}\s+)?(?:just\s+)?"
    r"(?:found (?:it|that|out|the (?:problem|issue|answer|solution|fix|cause|culprit))"
    r"|found a (?:fix|solution|way|workaround)|figured(?: it)? out|figured it|managed to"
    r"|worked it out)",
    r"got (?:it|that|this|everything) (?:working|to work|running|going|fixed|sorted|installed)",
    rf"(?:{_SUBJECT}\s+)?(?:works|worked|did it|did the trick|helped|{_DONE} it)",
    rf"{_SUBJECT}\s+(?:is\s+|was\s+)?(?:now\s+)?(?:work|working|{_DONE})",
    rf"(?:the|my|that|this)\s+(?:\S+\s+){{0,2}}(?:is|was|got|has been)\s+(?:now\s+)?"
    rf"(?:{_DONE}|working|gone)",
    rf"problem\s+{_DONE}",
    # (in the past: `the fix is ready for review` hands work over)
    r"(?:for reference\s+)?the\s+(?:solution|fix|answer|trick|workaround|culprit|cause)\s+was",
    # a move elsewhere
    rf"{_I_WILL}\s+(?:just\s+)?{_MESSAGE}\s+{_YOU}",
    rf"(?:i\s+)?(?:just\s+)?(?:pm'd|pmed|pm'ed|msg'd|msged|messaged|dm'd|dmed|queried)\s+{_YOU}",
    rf"(?:i\s+)?(?:just\s+)?(?:sent|send)\s+{_YOU}\s+(?:a\s+)?{_MESSAGE}",
    rf"(?:check|see|read)\s+(?:your\s+|ur\s+|the\s+|my\s+)?{_MESSAGE}s?",
    rf"(?:let's|lets)\s+(?:take|continue|move|go)\s+(?:this\s+|it\s+)?(?:to\s+|in\s+)?"
    rf"(?:{_MESSAGE}|private)",
)
_CLOSING: Final = re.compile(rf"{_LEAD}(?:{'|'.join(_OPENINGS)})(?![\w'])")
# `now` before a subject reports a new state (`thanks, now I get a black screen`).
_NEW_STATE: Final = re.compile(r"\bnow (?:i|it|it's|its|there|the|my|we|he|she|they)\b")


def is_closing(words: list[str]) -> bool:
    """Whether a message of these words (`core.intent_words.words`, case-folded, with no `?`
    and no other intent) opens with a closing and stays short without a blocker."""
    if not words or len(words) > MAX_WORDS:
        return False
    if any(w in BLOCKERS or w.endswith("n't") for w in words):
        return False
    joined = " ".join(words)
    return _CLOSING.match(joined) is not None and _NEW_STATE.search(joined) is None
