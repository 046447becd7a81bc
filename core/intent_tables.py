"""The kinds of `Intent` and the default tables `IntentRules` reads them by.

Every table here is data: the phrases (`DEFAULT_PHRASES`) and regular expressions
(`DEFAULT_PATTERNS`) of each intent, the words that negate a phrase (`NEGATORS`) and the emoji that
alone make a message thanks (`GRATITUDE_EMOJI`). How they are applied is `core.intent`'s docstring;
a workspace manifest extends them through `IntentRules.with_overrides`.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

__all__ = [
    "DEFAULT_PATTERNS",
    "DEFAULT_PHRASES",
    "GRATITUDE_EMOJI",
    "NEGATORS",
    "OPENER",
    "PATTERN_KEYWORDS",
    "Intent",
]


class Intent(StrEnum):
    """One thing a message asks for or is; a message can carry several."""

    THANKS = "thanks"  # gratitude, acknowledgement or social filler, and nothing else
    ASSIGNMENT = "assignment"
    APPROVAL = "approval"
    BLOCKER = "blocker"
    URGENT = "urgent"
    STATUS = "status"  # a status, log or progress broadcast
    LEAVE = "leave"  # asks the agent to leave the channel or thread
    STOP = "stop"  # asks the agent to stop or cancel work
    QUESTION = "question"


# Thanks vocabulary: the whole message must be made of these (in any order and number).
_THANKS = (
    "thanks", "thank you", "thank u", "thankyou", "thx", "thnx", "thanx", "tks", "tnx", "ty",
    "tysm", "tyvm", "cheers", "much appreciated", "appreciate it", "appreciated", "many thanks",
    "got it", "gotcha", "ok", "okay", "k", "kk", "alright", "noted", "will do", "roger",
    "roger that", "ack", "understood", "makes sense", "all good",
    "cool", "nice", "great", "awesome", "perfect", "sounds good", "excellent", "amazing",
    "brilliant", "sweet", "neat", "good job", "great job", "nice work", "great work",
    "good work", "well done", "nice one", "love it", "lol", "haha",
    "np", "no problem", "no worries", "you're welcome", "youre welcome", "yw",
    # Intensifiers and fillers that only ever accompany the above.
    "so much", "a lot", "a ton", "very much", "very", "really", "so", "again", "all",
    "everyone", "folks", "team", "guys", "you", "u", "for the help", "for your help",
    "for that", "for this", "for everything", "for the update", "in advance", "oh", "ah",
    # Closings: the question is settled, or the asker goes off to try what they were told.
    "i see", "that fixed it", "that did it", "that did the trick", "that worked", "it worked",
    "it works", "it works now", "works now", "works", "fixed it", "fixed", "solved",
    "will try", "i'll try", "i will try", "i'll try it", "i'll try that", "try that",
    "trying it", "trying that", "trying now", "let me try", "i'll give it a try",
    "give it a try", "i'll check", "will check", "i'll look", "will look",
    "man", "mate", "dude", "bro", "bye",
    # Laughter: a remark enjoyed, nothing asked.
    "heh", "hehe", "hah", "lmao", "rofl",
    "see you", "cya", "later", "good night", "night", "have a good one", "for the tip",
    "for the info", "for the link", "for the tips", "for the advice", "for the suggestion",
    "for explaining", "for your time", "anyway", "ok then",
)  # fmt: skip

DEFAULT_PHRASES: Mapping[Intent, tuple[str, ...]] = MappingProxyType(
    {
        Intent.THANKS: _THANKS,
        Intent.ASSIGNMENT: (
            "can you", "could you", "would you", "will you", "can u", "could u",
            "take care of", "assign", "assigned to you", "your task", "i need you to",
            "need you to", "i want you to", "i'd like you to", "todo", "to-do", "action item",
            "look into", "pick this up", "follow up on", "make sure", "when you get a chance",
            "when you have a moment",
        ),
        Intent.APPROVAL: (
            "approved", "lgtm", "looks good to me", "sgtm", "go ahead", "ship it",
            "you can proceed", "please proceed", "ok to proceed", "clear to proceed",
            "green light", "greenlight", "good to go", "good to merge", "go for it",
        ),
        Intent.BLOCKER: (
            "blocked", "blocker", "blocking", "stuck", "can't proceed", "cant proceed",
            "cannot proceed", "unable to proceed", "can't continue", "cannot continue",
        ),
        Intent.URGENT: (
            "urgent", "urgently", "asap", "emergency", "outage", "prod is down",
            "production is down", "prod down", "sev1", "sev0", "p0", "immediately",
            "top priority", "drop everything",
        ),
        Intent.STATUS: (
            "fyi", "for your information", "status update", "progress update", "heads up",
            "nightly job", "nightly build", "ci passed", "ci failed", "ci is green",
            "ci is red", "build passed", "build failed", "build succeeded",
        ),
        Intent.LEAVE: (
            "leave this channel", "leave the channel", "leave this thread", "leave the thread",
            "leave this conversation", "leave this chat",
            "stop replying", "stop responding", "stop posting here", "stop talking",
            "not needed here", "leave us alone",
        ),
        Intent.STOP: (),
        Intent.QUESTION: (
            "quick question", "any idea", "any ideas", "do you know", "does anyone know",
            "i wonder", "wondering if", "wondering whether",
            # the room asked without a `?`: "anyone know how to ...", "anybody around"
            "anyone know", "anybody know", "anyone here", "anybody here", "anyone around",
            "anybody around", "anyone got", "anybody got", "anyone have", "anybody have",
            "anyone tried", "anyone seen", "anyone else",
        ),
    }
)  # fmt: skip

# Sentence openers that make a question even without `?`; `when you ...` is a condition.
OPENER = (
    r"(?:(?:ok|okay|so|hey|hi|hello|also|and|but|btw|um|hmm|well|oh)[\s,]+)*"
    r"(?:(?:what|why|how|where|who|whom|whose|which)(?:'s|'re|'d|'ll)?\b"
    r"|when\b(?!\s+(?:you|we|i|it|they|this|that)\b)"
    r"|(?:does|can|could|would|will|should|shall|is|are|was|were|has)\s+(?:you|u|we|i|they|it"
    r"|he|she|this|that|these|those|there|the|anyone|anybody|someone|somebody)\b"
    # `do this`, `have it done by friday` are orders; only a person after them asks.
    r"|(?:do|did|have|had|may|might|must|am)\s+(?:you|u|we|i|they|it|he|she|anyone|anybody"
    r"|someone|somebody)\b)"
)
# The interrogatives of `OPENER`, one of which any opener has as a whole word.
_OPENER_WORDS = (
    "what", "why", "how", "where", "who", "whom", "whose", "which", "when",
    "does", "can", "could", "would", "will", "should", "shall", "is", "are", "was", "were", "has",
    "do", "did", "have", "had", "may", "might", "must", "am",
)  # fmt: skip
_FILLER = r"^(?:(?:hey|hi|ok|okay|actually|wait|no|sorry|oh|hmm|please)[\s,.!]+)*"
_HALT_WORDS = ("stop", "cancel", "abort", "halt")
_HALT = rf"(?:{'|'.join(_HALT_WORDS)})"
_PLACE = r"(?:this|the)\s+(?:channel|thread|chat|conversation|room|server)\b"
# What may follow `leave` when it means "leave here", not "leave a review".
_LEAVE_TAIL = rf"(?:$|[.!?]|{_PLACE}|now\b|us\b|here\b)"
# `leave` as a whole word in `leave\s*{_LEAVE_TAIL}`, where `\s*` may be empty.
_LEAVE_WORDS = ("leave", "leavenow", "leaveus", "leavehere", "leavethis", "leavethe")

# Each default pattern with its keywords, of which at least one is in any text the pattern can
# match: a keyword of word characters as a whole word (a maximal run of `\w`, so the pattern has
# `\b`, `\s`, `^`, `$` or punctuation around it), any other keyword anywhere. Keywords only let
# `classify` skip a search that cannot succeed; they never make a pattern match. A pattern
# without keywords, such as one a manifest adds, is always searched.
_PATTERN_TABLE: Mapping[Intent, tuple[tuple[str, tuple[str, ...]], ...]] = MappingProxyType(
    {
        # Stretched spellings only, so that removing a phrase removes its plain form.
        Intent.THANKS: (
            (r"thaa+nks+|thanks{2,}", ()), (r"okk+", ()), (r"cooo+l", ()), (r"nii+ce", ()),
            (r"bwa(?:ha)+h?|(?:ha){3,}h?|he(?:he){2,}h?|lo+l(?:ol)+|lo{2,}l", ()),
        ),
        Intent.ASSIGNMENT: (
            (r"\bassign(?:ed|ing)?\s+(?:this|that|it|you)\b", ("assign", "assigned", "assigning")),
            (
                r"\bplease\s+(?!(?:stop|cancel|abort|halt|note|ignore|disregard|see|find)\b)"
                rf"(?!leave\s*{_LEAVE_TAIL})[a-z]",
                ("please",),
            ),
        ),
        Intent.APPROVAL: (),
        Intent.BLOCKER: (),
        Intent.URGENT: (
            (r"!{3,}", ("!!!",)),
            (r"\bsev\s*-?\s*[01]\b", ("sev", "sev0", "sev1")),
            (
                r"\b(?:prod|production|site|website|api|server|database|db)\s+"
                r"(?:is|are|went|has\s+gone)\s+down\b",
                ("down",),
            ),
        ),
        Intent.STATUS: (
            (
                r"^(?:status|update|progress|fyi|eod|standup|info|log|heads\s+up)\s*:",
                ("status", "update", "progress", "fyi", "eod", "standup", "info", "log", "heads"),
            ),
            (
                r"^\[(?:info|log|warn|warning|error|debug|status|update|notice)\]",
                ("info", "log", "warn", "warning", "error", "debug", "status", "update", "notice"),
            ),
            (r"^\d{4}-\d{2}-\d{2}[t ]\d{2}:\d{2}", ("-",)),
            (
                r"\b(?:build|job|run|pipeline|workflow)\s+#?\d+\s+"
                r"(?:passed|failed|succeeded|completed|finished|started|is\s+(?:green|red))\b",
                ("build", "job", "run", "pipeline", "workflow"),
            ),
            (r"\bdeployed\b[^?!\n]{0,60}?\bto\s+\w(?![^?\n]*\?)", ("deployed",)),
            (
                r"\bdeploy(?:ment)?\s+"
                r"(?:started|finished|complete|completed|succeeded|failed|done)\b",
                ("deploy", "deployment"),
            ),
            (
                r"\b(?:ci|tests|checks|pipeline)\s+(?:passed|failed|succeeded"
                r"|(?:is|are)\s+(?:green|red|passing|failing))\b",
                ("ci", "tests", "checks", "pipeline"),
            ),
        ),
        Intent.LEAVE: (
            (r"^(?:please\s+)?leave(?:\s+(?:now|please|us))*\s*[.!]*$", ("leave",)),
            (rf"\bplease\s+leave\s*{_LEAVE_TAIL}", _LEAVE_WORDS),
            (
                rf"\b(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+)?leave\s*{_LEAVE_TAIL}",
                _LEAVE_WORDS,
            ),
            (rf"\byou\s+can\s+leave\s*{_LEAVE_TAIL}", _LEAVE_WORDS),
            # Addressed, not described: "go away" but not "make the error go away".
            (
                r"(?:^|[.!,;]\s*|\bplease\s+|\bjust\s+)(?:go\s+away|get\s+out)\b"
                r"(?!\s+(?:the|a|of\s+the)\b)",
                ("away", "out"),
            ),
        ),
        Intent.STOP: (
            # The whole message is a bare command.
            (
                _FILLER + rf"(?:{_HALT}|never\s?mind|nvm|forget\s+it|stand\s+down)"
                rf"(?:[\s,.!]+(?:{_HALT}|it|that|this|now|please|right\s+now|everything|all))*"
                r"[\s.!]*$",
                (*_HALT_WORDS, "never", "nevermind", "nvm", "forget", "stand"),
            ),
            # An imperative about current work, unless a `?` turns it into musing.
            (
                _FILLER + _HALT + r"\s+(?:working\s+on|what\s+you(?:'re|\s+are)\s+doing|the|that"
                r"|this|your|all|everything)\b(?![^?]*\?)",
                _HALT_WORDS,
            ),
            # A polite request, which may end in `?`.
            (
                r"^(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+)?" + _HALT + r"\b",
                _HALT_WORDS,
            ),
        ),
        # An interrogative opener counts at the message's start or after a sentence end.
        Intent.QUESTION: (
            (r"\?", ("?",)),
            ("^" + OPENER, _OPENER_WORDS),
            (r"[.!?\n]\s*" + OPENER, _OPENER_WORDS),
        ),
    }
)  # fmt: skip

DEFAULT_PATTERNS: Mapping[Intent, tuple[str, ...]] = MappingProxyType(
    {intent: tuple(pattern for pattern, _ in table) for intent, table in _PATTERN_TABLE.items()}
)
# Each default pattern's keywords (see `_PATTERN_TABLE`); a pattern not here is always searched.
PATTERN_KEYWORDS: Mapping[str, frozenset[str]] = MappingProxyType(
    {
        p: frozenset(keywords)
        for table in _PATTERN_TABLE.values()
        for p, keywords in table
        if keywords
    }
)

# Emoji that alone make a message thanks, normalised (`core.signals.unicode_form` and
# `shortcode_form`); ":)" is read as 🙂.
GRATITUDE_EMOJI: frozenset[str] = frozenset(
    {
        "🙏", "👍", "❤", "🎉", "😊", "👌", "✅", "🙌", "👏", "💯", "😄", "😀", "🙂", "☺",
        "🤗", "💪", "✨", "🥳", "😍", "🫶", "💙", "💚", "💜", "🧡", "💛", "🆗",
        "pray", "+1", "heart", "tada", "blush", "ok_hand", "white_check_mark", "raised_hands",
        "clap", "100", "smile", "grinning", "slightly_smiling_face", "relaxed", "hugging_face",
        "muscle", "sparkles", "partying_face", "heart_eyes", "ok", "thankyou",
    }
)  # fmt: skip

NEGATORS: frozenset[str] = frozenset(
    {
        "not", "no", "never", "non", "don't", "dont", "didn't", "didnt", "doesn't", "doesnt",
        "isn't", "isnt", "aren't", "arent", "wasn't", "wasnt", "won't", "wont", "shouldn't",
        "can't", "cant", "cannot", "unable", "without", "nothing",
    }
)  # fmt: skip
