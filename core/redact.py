"""Finding secrets in text and JSON-like values and replacing each with a label naming its kind.

Every place where text leaves the host or is stored passes it through one `Redactor`: events
as they enter the engine (so the ledger, the deliveries and the prompts never hold a secret),
the outbox and the audit table (so a model cannot echo one into a channel), the quarantine,
and every log record. A secret becomes `[redacted:<kind>]`, so a person reading the result
sees what was there and why it is gone.

Two kinds of finding:

- by shape (`_RULES`): the token formats of OpenAI, Anthropic, GitHub and AWS, c2a's own
  (`c2a_...`: what an agent's chat tools endpoint admits, `TOKEN_PREFIX`), PEM private keys,
  JWTs, `Authorization` headers, passwords in URLs, and the value of any secret-named
  `key=value` or `key: value` pair; and the `SecretShape`s each chat platform's adapter brings
  (its tokens and webhooks), which the composition root gives every redactor it builds, so a
  platform's token is found wherever it is pasted;
- by value: the secrets the workspace itself was configured with (`Redactor.for_manifest`),
  replaced wherever they appear, whatever their shape.

Each rule runs in time linear in the text: a repetition either cannot give characters back
(possessive, `++`) or is bounded, and a rule that could start anywhere inside a word starts
only at a word's start (a lookbehind), so no input makes the engine try the same characters
again and again. Structures (`Redactor.data`) are redacted field by field: a secret-named field
(`token`, `password`, `client_secret`, `apiKey`, ...) loses its value whatever it is, and every
other string passes through `Redactor.text`.

The same doors make text storable (`well_formed`): a NUL character and a lone surrogate (half
of a UTF-16 pair, which a JSON `\\u` escape in a platform's payload or a model's answer can
make) become U+FFFD, since the ledger (or the JSON sent on) could not hold them.
"""

from __future__ import annotations

import functools
import re
import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Final

from pydantic import BaseModel

from core.events import ChatEvent

__all__ = [
    "CONFIGURED",
    "MIN_CONFIGURED",
    "TOKEN_PREFIX",
    "WORD_START",
    "Redactor",
    "SecretShape",
    "is_secret_name",
    "label",
    "new_token",
    "well_formed",
    "well_formed_data",
]

# Configured values shorter than this are too likely to be ordinary words to replace by value.
MIN_CONFIGURED = 8
TOKEN_PREFIX: Final = "c2a_"
"""What starts a token c2a makes (`c2a_` and 43 URL-safe characters, `new_token`), so that one
pasted anywhere is found by its shape, as GitHub's `ghp_` tokens are."""
# A structure nested deeper than this is not chat data; its inside is dropped, not searched.
MAX_DEPTH = 64
CONFIGURED: Final = "configured-secret"

_START = "(?<![A-Za-z0-9_-])"  # a token starts a word, never inside one
WORD_START: Final = _START
# The last word of a secret's name: `api_key`, `clientSecret`, `AWS_SECRET_ACCESS_KEY`, ...
_SECRET_WORD = (
    r"(?:token|secret|password|passwd|passphrase|credentials?"
    r"|(?:api|access|secret|private|signing|encryption|master)[_.-]?key|apikey)"
)
_PAIR = r"""["']?[ \t]{0,8}[:=][ \t]{0,8}["']?"""  # `=`, `: `, `": "`

# (kind, pattern), applied in this order, each to the text the ones before it left. A pattern
# may begin with a `(?P<keep>...)` group: what that matched stays (a name such as `password=`)
# and only the rest is replaced. The specific shapes come first, so a token in a `key=value`
# pair is named for what it is; no pattern matches a label an earlier one left.
_RULES: tuple[tuple[str, str], ...] = (
    (
        "private-key",
        r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----"
        r"(?s:.*?)(?:-----END[ A-Z0-9]{0,40}-----|\Z)",
    ),
    ("anthropic-key", _START + r"sk-ant-[\w-]{20,}+"),
    ("openai-key", _START + r"sk-(?:proj-|svcacct-|admin-)?[\w-]{20,}+"),
    ("github-token", _START + r"(?:gh[pousr]_[A-Za-z0-9]{30,}+|github_pat_\w{22,}+)"),
    ("c2a-token", _START + TOKEN_PREFIX + r"[A-Za-z0-9_-]{40,}+"),
    ("aws-access-key", r"(?<![A-Za-z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Za-z0-9])"),
    (
        "aws-secret",
        r"(?P<keep>(?i:(?:aws[_.-]?)?secret[_.-]?(?:access[_.-]?)?key)"
        + _PAIR
        + r")[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
    ),
    ("jwt", _START + r"eyJ[\w-]{8,}+\.eyJ[\w-]{8,}+\.[\w-]*+"),
    (
        "authorization",
        r"(?P<keep>"
        + _START
        + r"""(?i:(?:proxy-)?authorization["']?[ \t]{0,8}[:=][ \t]{0,8}["']?"""
        + r"(?:(?:bearer|basic|bot|token|digest)[ \t]{1,8})?+))"
        + r"[A-Za-z0-9._~+/=-]{4,}+",
    ),
    ("url-password", r"(?P<keep>(?<=://)[\w.~%+-]{1,64}:)[^\s/@:\[]{1,256}+(?=@)"),
    # A match starts at the name's last word (`TOKEN=` of `SLACK_BOT_TOKEN=`), not at the
    # name's start: looking for a word is cheaper than trying every place a name could start.
    (
        "secret-value",
        r"(?P<keep>(?i:" + _SECRET_WORD + ")" + _PAIR + r""")(?!\[redacted:)[^\s"'`,;&]{6,}+""",
    ),
)


def label(kind: str) -> str:
    """What replaces a secret of this kind."""
    return f"[redacted:{kind}]"


# What a text must hold (once lower-cased) for each rule to be tried at all, any one of them:
# a substring test costs next to nothing, so most messages skip most patterns.
_NEEDS: dict[str, tuple[str, ...]] = {
    "private-key": ("-----begin",),
    "anthropic-key": ("sk-ant-",),
    "openai-key": ("sk-",),
    "github-token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "c2a-token": (TOKEN_PREFIX,),
    "aws-access-key": ("akia", "asia", "abia", "acca"),
    "aws-secret": ("secret",),
    "jwt": ("eyj",),
    "authorization": ("authorization",),
    "url-password": ("://",),
    "secret-value": ("token", "secret", "pass", "credential", "key"),
}

_Replace = Callable[[re.Match[str]], str]
_Rule = tuple[tuple[str, ...], re.Pattern[str], _Replace]


@dataclass(frozen=True, slots=True)
class SecretShape:
    """A secret's shape a platform adapter brings: `kind` names it in its label, `pattern`
    finds it (in linear time, as every rule here), `needs` are what a lower-cased text must
    hold, one of them, for the pattern to be tried, and it runs just before the rule of kind
    `before`, so a more general rule does not claim it first."""

    kind: str
    pattern: str
    needs: tuple[str, ...]
    before: str = "secret-value"


def _rule(kind: str, pattern: str, needs: tuple[str, ...]) -> _Rule:
    text = label(kind)
    compiled = re.compile(pattern)
    if pattern.startswith("(?P<keep>"):
        return needs, compiled, lambda match: match.group("keep") + text
    return needs, compiled, lambda match: text


@functools.cache
def _compiled(shapes: tuple[SecretShape, ...]) -> tuple[_Rule, ...]:
    """One compiled pattern per rule, the shapes placed before their `before` rule: apart,
    each gets the regex engine's quick scan for its first characters, which one alternation of
    them all does not (that was several times slower)."""
    known = {kind for kind, _ in _RULES}
    for shape in shapes:
        if shape.before not in known:
            raise ValueError(f"secret shape {shape.kind} runs before unknown rule {shape.before}")
    rules: list[_Rule] = []
    for kind, pattern in _RULES:
        for shape in shapes:
            if shape.before == kind:
                rules.append(_rule(shape.kind, shape.pattern, shape.needs))
        rules.append(_rule(kind, pattern, _NEEDS[kind]))
    return tuple(rules)


_SHORT: Final = 64
"""Texts up to this long are remembered by the redactor that redacted them."""
_REMEMBERED: Final = 4096
"""How many short texts a redactor remembers before it starts afresh."""
_UNSEEN: Final = "\0unseen"  # no text a redactor is given is this object

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SECRET_NAME = re.compile(
    r"(?:^|_)(?:" + _SECRET_WORD.replace("[_.-]?", "_?") + r"|authorization|cookie)$"
)
_FIELD = label("secret-field")
_TOO_DEEP = label("too-deep")
_CONFIGURED = label(CONFIGURED)


@functools.lru_cache(maxsize=1024)
def is_secret_name(name: str) -> bool:
    """Whether a field of this name holds a secret (`token`, `bot_token`, `clientSecret`,
    `X-Api-Key`, `AWS_SECRET_ACCESS_KEY`, `Set-Cookie`, ...): its last word says so."""
    if len(name) > 100:
        return False
    snake = _CAMEL.sub("_", name).lower().replace("-", "_").replace(".", "_")
    return _SECRET_NAME.search(snake) is not None


class Redactor:
    """Replaces secrets by shape (the built-in rules and the platforms' `shapes`), and the
    `configured` secrets by value (each at least `MIN_CONFIGURED` characters; shorter ones are
    ignored). Immutable; build it once at start. It remembers what it made of the last few
    thousand short strings (`_SHORT`): the field names and host words of every log line repeat,
    and each would otherwise go through every rule again."""

    __slots__ = ("_rules", "_seen", "configured", "shapes")

    def __init__(self, configured: Iterable[str] = (), shapes: Iterable[SecretShape] = ()) -> None:
        values = {v for v in configured if len(v) >= MIN_CONFIGURED}
        # Longest first, so a secret that contains another is replaced whole.
        self.configured: Final = tuple(sorted(values, key=lambda v: (-len(v), v)))
        self.shapes: Final = tuple(shapes)
        self._rules: Final = _compiled(self.shapes)
        self._seen: Final[dict[str, str | None]] = {}  # a short text: its redaction, None if clean

    @classmethod
    def for_manifest(
        cls,
        manifest: BaseModel | Mapping[str, Any],
        environ: Mapping[str, str],
        shapes: Iterable[SecretShape] = (),
    ) -> Redactor:
        """A redactor for one workspace: every secret its manifest (loaded, or as a mapping)
        names, by value. A secret-named `*_env` key (`bot_token_env`, `api_key_env`)
        names an environment variable whose value is a secret, and so does each secret-named
        variable in the list of any `*_env` key (a harness's `pass_env: [ANTHROPIC_API_KEY]`);
        a secret-named key's own string value (a harness's `env: {OPENAI_API_KEY: ...}`) is
        one too."""
        data = manifest.model_dump() if isinstance(manifest, BaseModel) else manifest
        return cls(_configured(data, environ), shapes)

    def with_configured(self, values: Iterable[str]) -> Redactor:
        """This redactor, also replacing `values`."""
        return Redactor((*self.configured, *values), self.shapes)

    def text(self, text: str) -> str:
        """`text` with every secret replaced by its label; the same object when it held none."""
        if len(text) > _SHORT:
            return self._redacted(text)
        seen = self._seen.get(text, _UNSEEN)
        if seen is _UNSEEN:
            redacted = self._redacted(text)
            if len(self._seen) >= _REMEMBERED:
                self._seen.clear()
            seen = self._seen[text] = None if redacted is text else redacted
        return text if seen is None else seen

    def _redacted(self, text: str) -> str:
        text = well_formed(text)
        for value in self.configured:
            if value in text:
                text = text.replace(value, _CONFIGURED)
        folded = text.lower()
        for needs, pattern, replacement in self._rules:
            for need in needs:
                if need in folded:
                    text = pattern.sub(replacement, text)  # the same object when no match
                    break
        return text

    def data(self, value: Any, depth: int = 0) -> Any:
        """A JSON-like value (mappings, lists, strings, numbers) with its secrets replaced: a
        secret-named field's whole value, and secrets inside every other string, keys too.
        Mappings come back as dicts and sequences as lists; the input is not changed."""
        if isinstance(value, str):
            return self.text(value)
        if depth >= MAX_DEPTH and isinstance(value, Mapping | list | tuple):
            return _TOO_DEEP
        if isinstance(value, Mapping):
            return {
                self.text(str(key)): (
                    _FIELD
                    if is_secret_name(str(key)) and not _empty(item)
                    else self.data(item, depth + 1)
                )
                for key, item in value.items()
            }
        if isinstance(value, list | tuple):
            return [self.data(item, depth + 1) for item in value]
        return value

    def event(self, event: ChatEvent) -> ChatEvent:
        """The event with the text people wrote (message or edit text, the author's display
        name) redacted; the same object when there was nothing to redact."""
        text = self.text(event.text)
        name = event.author.display_name
        clean = self.text(name) if name else name
        if text is event.text and clean is name:
            return event
        author = event.author if clean is name else replace(event.author, display_name=clean)
        return replace(event, text=text, author=author)


_LONE_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """`text` made storable: each NUL character, which PostgreSQL's text cannot hold, and each
    half of a UTF-16 pair standing alone, which no UTF-8 store or wire can (only a JSON `\\u`
    escape makes one), replaced by U+FFFD; the same object when it has neither."""
    if "\x00" in text:
        text = text.replace("\x00", "\ufffd")
    return text if text.isascii() else _LONE_SURROGATE.sub("\ufffd", text)


def well_formed_data(value: Any) -> Any:
    """Every string in a JSON-like value (mappings, lists) made `well_formed`."""
    if isinstance(value, str):
        return well_formed(value)
    if isinstance(value, Mapping):
        return {key: well_formed_data(item) for key, item in value.items()}
    if isinstance(value, list):
        return [well_formed_data(item) for item in value]
    return value


def _empty(value: Any) -> bool:
    """A field with nothing in it keeps it: `"token": null` is no secret to hide."""
    return value is None or value == "" or isinstance(value, bool)


def _configured(data: Any, environ: Mapping[str, str], depth: int = 0) -> list[str]:
    found: list[str] = []
    if depth >= MAX_DEPTH:
        return found
    if isinstance(data, Mapping):
        for key, value in data.items():
            name = str(key)
            if isinstance(value, str) and name.endswith("_env") and is_secret_name(name[:-4]):
                found.append(environ.get(value, ""))
            elif isinstance(value, list) and name.endswith("_env"):
                named = (n for n in value if isinstance(n, str) and is_secret_name(n))
                found.extend(environ.get(n, "") for n in named)
            elif isinstance(value, str) and is_secret_name(name):
                found.append(value)
            else:
                found.extend(_configured(value, environ, depth + 1))
    elif isinstance(data, list | tuple):
        for item in data:
            found.extend(_configured(item, environ, depth + 1))
    return found


def new_token() -> str:
    """A new secret token of c2a's own shape (`TOKEN_PREFIX`, 256 random bits)."""
    return TOKEN_PREFIX + secrets.token_urlsafe(32)
