"""Model text to Slack text, and where a reply goes: pure functions, no I/O.

`to_mrkdwn` turns Markdown as models write it into Slack mrkdwn that cannot mention anyone: every
`&`, `<` and `>` of the model's text is escaped (so a stray `<@U…>`, `<!here>`, `<!channel>`,
`<!everyone>` or `<!subteam^…>` shows as text), a bare `@here`/`@channel`/`@everyone` gets an
invisible word joiner after its `@`, and only links with a web or mail address become native
links. Inside code nothing is reformatted, but `&<>` are escaped there too: Slack reads control
sequences anywhere in a message and shows the entities as the characters inside code.

The mentions the agent chose (the action's `mentions`) are the only native ones:
`mention_prefix` renders them from the workspace manifest, and `split` cuts long text into parts
that each stay under Slack's practical length, closing and reopening code fences at a cut.
`place` decides the channel and thread of a reply.

Model text is untrusted: every function here takes time linear in its text, so no reply can
stall the sender (no regex searches lazily for a closer that may never come).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass

from core.actions import Post, Working
from core.errors import RenderError
from core.events import ChatEvent, ConversationKind
from core.manifest import Workspace

__all__ = [
    "MAX_CHARS",
    "Placement",
    "escape",
    "mention_prefix",
    "message_ref",
    "place",
    "plain",
    "render_message",
    "split",
    "to_mrkdwn",
]

MAX_CHARS = 3000
"""Where long text is cut: well under Slack's 4,000 recommended and 40,000 hard limit."""

FENCE = "```"
_WORD_JOINER = "\u2060"
_PLACEHOLDER = re.compile("\ue000(\\d+)\ue001")
_BOLD_HELD = re.compile("\ue002(\\d+)\ue003")
_PRIVATE = re.compile("[\ue000-\ue003]")
_FENCE_LINE = re.compile(r"^\s{0,3}(```+|~~~+)")
_HEADING = re.compile(r"^\s{0,3}#{1,6}\s+")  # its text: the rest, less closing `#`s and blanks
_BULLET = re.compile(r"^(\s*)[-*+]\s+(?=\S)")
_BACKTICKS = re.compile(r"`+")
# Neither part holds `[`, so the text each candidate link scans ends where the next begins.
_LINK = re.compile(r"\[([^\[\]\n]*)\]\(\s*<?([^)\s>\[]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# An address holds no placeholder: code inside one leaves the link as text.
_AUTOLINK = re.compile(r"<((?:https?://|mailto:)[^\s<>|\ue000-\ue003]+)>")
_SPACES = re.compile(" *")
# Emphasis as (opener, closer): each captures its mark, the text between is at least one
# character, and `_delimited` pairs them. Searching `opener(.+?)closer` instead takes time
# quadratic in a line of openers that are never closed.
_Delimiter = tuple[re.Pattern[str], re.Pattern[str]]
_BOLD: _Delimiter = (re.compile(r"(?=(\*\*|__)\S)"), re.compile(r"(?<=\S)(?=(\*\*|__))"))
_ITALIC: _Delimiter = (
    re.compile(r"(?<![\w*])(?=(\*)[^\s*])"),
    re.compile(r"(?<=[^\s*])(?=(\*)(?![\w*]))"),
)
_STRIKE: _Delimiter = (re.compile(r"(?=(~~)\S)"), re.compile(r"(?<=\S)(?=(~~))"))
_BROADCAST = re.compile(r"(?<![\w@])@(here|channel|everyone)\b", re.IGNORECASE)
_SAFE_URL = re.compile(r"^(?:https?://|mailto:)[^\s<>|\ue000-\ue003]+$", re.IGNORECASE)
_USER_ID = re.compile(r"^[UW][A-Z0-9]+$")
_GROUP_ID = re.compile(r"^S[A-Z0-9]+$")
_MESSAGE_EVENT = re.compile(r"^slack:[^:]+:([^:/~]+):(\d+\.\d+)(?:~.*)?$")


def escape(text: str) -> str:
    """Escape Slack's three control characters, so the text shows as written."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def plain(text: str) -> str:
    """`text` shown as written, with nothing in it that links or mentions anyone."""
    return _defuse(escape(text))


def to_mrkdwn(markdown: str) -> str:
    """Slack mrkdwn for Markdown as models write it; nothing in it can mention anyone.

    Bold (`**x**`, `__x__`) becomes `*x*`, italic `*x*` becomes `_x_`, `~~x~~` becomes `~x~`,
    headings become bold lines, `-`/`*` bullets become `•`, `[text](url)` and `<url>` become
    `<url|text>` for http(s) and mailto addresses (other links stay text), inline code and
    fenced blocks keep their content (fences lose their language tag, which Slack would show),
    and an unclosed fence is closed. Inline code is a run of backticks closed by the next run
    of the same length; an emphasis opener closes at the first closer after it.

    Runs in time linear in the text, whatever it holds.
    """
    text = _PRIVATE.sub("", markdown.replace("\r\n", "\n").replace("\r", "\n"))
    out: list[str] = []
    fence: str | None = None
    for line in text.split("\n"):
        opener = _FENCE_LINE.match(line)
        if fence is not None:
            if opener and opener.group(1)[0] == fence[0] and len(opener.group(1)) >= len(fence):
                out.append(FENCE)
                fence = None
            else:
                out.append(escape(line))
        elif opener:
            fence = opener.group(1)
            out.append(FENCE)
        else:
            out.append(_prose_line(line))
    if fence is not None:
        out.append(FENCE)
    return "\n".join(out).strip("\n")


def _prose_line(line: str) -> str:
    if not line:
        return line  # most of a long answer's lines between paragraphs: nothing to convert
    heading = _HEADING.match(line)
    if heading:
        text = line[heading.end() :].rstrip().rstrip("#").rstrip()
        return f"*{_inline(text)}*" if text else ""
    bullet = _BULLET.match(line)
    if bullet:
        return f"{bullet.group(1)}• {_inline(line[bullet.end() :])}"
    return _inline(line)


def _inline(text: str) -> str:
    """One line of prose: code spans kept, links made native, emphasis converted, escaped."""
    kept: list[str] = []

    def keep(rendered: str) -> str:
        kept.append(rendered)
        return f"\ue000{len(kept) - 1}\ue001"

    def restore(text: str) -> str:
        return _PLACEHOLDER.sub(lambda m: kept[int(m.group(1))], text)

    def code(whole: str, content: str) -> str:
        return keep(f"`{escape(content)}`" if "`" not in content else escape(whole))

    def link(match: re.Match[str]) -> str:
        label, url = match.group(1), match.group(2)
        if not _SAFE_URL.match(url):
            return match.group(0)  # stays text (escaped below): never a native sequence
        label = label.strip() or url
        return keep(f"<{escape(url)}|{restore(_emphasis(_defuse(escape(label))))}>")

    def autolink(match: re.Match[str]) -> str:
        return keep(f"<{escape(match.group(1))}>")

    text = _replace(text, _code_spans(text), code)
    text = _LINK.sub(link, text)
    text = _AUTOLINK.sub(autolink, text)
    return restore(_emphasis(_defuse(escape(text))))


def _emphasis(text: str) -> str:
    """One line's bold, italic and strike as mrkdwn."""
    bold: list[str] = []

    def hold(whole: str, content: str) -> str:
        bold.append(content)
        return f"\ue002{len(bold) - 1}\ue003"

    text = _replace(text, _delimited(text, _BOLD), hold)
    text = _replace(text, _delimited(text, _ITALIC), lambda _, content: f"_{content}_")
    text = _replace(text, _delimited(text, _STRIKE), lambda _, content: f"~{content}~")
    return _BOLD_HELD.sub(lambda m: f"*{bold[int(m.group(1))]}*", text)


# A span of a line: where it starts, where its content starts and ends, where it ends.
_Span = tuple[int, int, int, int]


def _replace(text: str, spans: Iterable[_Span], render: Callable[[str, str], str]) -> str:
    """`text` with each span (in order, none overlapping) replaced by `render(whole, content)`."""
    out: list[str] = []
    done = 0
    for start, body, body_end, end in spans:
        out += (text[done:start], render(text[start:end], text[body:body_end]))
        done = end
    out.append(text[done:])
    return "".join(out)


def _code_spans(line: str) -> Iterator[_Span]:
    """The code spans of a line, from the left: a run of backticks and the next run of the same
    length; a run with none after it is text. Linear: each run knows the next of its length."""
    runs = [match.span() for match in _BACKTICKS.finditer(line)]
    same_after: list[int | None] = [None] * len(runs)
    last: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        start, end = runs[index]
        same_after[index] = last.get(end - start)
        last[end - start] = index
    index = 0
    while index < len(runs):
        closing = same_after[index]
        if closing is None:
            index += 1
            continue
        yield runs[index][0], runs[index][1], runs[closing][0], runs[closing][1]
        index = closing + 1


def _delimited(line: str, delimiter: _Delimiter) -> Iterator[_Span]:
    """The spans `opener content closer` of a line as the lazy search `opener(.+?)closer` finds
    them, from the left and with the same mark on both sides, in linear time: whether a closer
    closes does not depend on the opener, so each opener takes the first closer after it."""
    opener, closer = delimiter
    closers: dict[str, list[int]] = {}
    for match in closer.finditer(line):
        closers.setdefault(match.group(1), []).append(match.start())
    seen = dict.fromkeys(closers, 0)  # per mark, the closers before this one close no opener
    free = 0  # where the next span may start
    for match in opener.finditer(line):
        start, mark = match.start(), match.group(1)
        if start < free or mark not in closers:
            continue
        found, body = closers[mark], start + len(mark)
        index = seen[mark]
        while index < len(found) and found[index] <= body:  # the content is never empty
            index += 1
        seen[mark] = index
        if index < len(found):
            free = found[index] + len(mark)
            yield start, body, found[index], free


def _defuse(text: str) -> str:
    """`@here`, `@channel`, `@everyone` as text that no Slack setting turns into a ping."""
    return _BROADCAST.sub(lambda m: f"@{_WORD_JOINER}{m.group(1)}", text)


def mention_prefix(mentions: Sequence[str], workspace: Workspace) -> str:
    """The native mentions for the recipients the agent chose, space-separated.

    `agent:<id>` is that agent's Slack user (`<@U…>`), `role:<name>` the role's Slack user
    groups (`<!subteam^S…>`), or its agents when it has no group, `user:<id>` that user.
    Raises RenderError for a recipient the manifest cannot resolve to a Slack id.
    """
    manifest = workspace.manifest
    rendered: list[str] = []
    for mention in mentions:
        kind, _, name = mention.partition(":")
        if kind == "agent":
            user_id = workspace.user_id("slack", name) if name in manifest.agents else None
            if user_id is None:
                raise RenderError(f"recipient {mention} has no Slack user in the manifest")
            found = [f"<@{user_id}>"]
        elif kind == "role":
            if name not in manifest.roles:
                raise RenderError(f"recipient {mention} is not a role of the manifest")
            groups = [
                g for g in manifest.roles[name].groups("slack_usergroups") if _GROUP_ID.match(g)
            ]
            users = [workspace.user_id("slack", a) for a in workspace.agents_by_role[name]]
            found = [f"<!subteam^{g}>" for g in groups] or [f"<@{u}>" for u in users if u]
            if not found:
                raise RenderError(f"recipient {mention} has no Slack user group or agents")
        elif kind == "user" and _USER_ID.match(name):
            found = [f"<@{name}>"]
        else:
            raise RenderError(f"recipient {mention!r} is not agent:, role: or a Slack user:")
        rendered.extend(m for m in found if m not in rendered)
    return " ".join(rendered)


def split(text: str, limit: int = MAX_CHARS) -> list[str]:
    """Cut text into parts of at most `limit` characters, at line ends where possible, then at
    spaces, never inside an entity or a `<…>` sequence; a code block cut in two is closed at
    the end of one part and reopened at the start of the next. Runs in time linear in the text.
    Raises RenderError for a limit too small to hold a fenced line."""
    if limit < 32:
        raise RenderError(f"split limit {limit} is too small")
    parts: list[str] = []
    current: list[str] = []
    used = 0  # the length of `current` joined by line breaks
    in_code = False
    reopened = False  # whether `current` opens with a fence reopened after a cut

    def add(line: str) -> None:
        nonlocal used
        used += len(line) + (1 if current else 0)
        current.append(line)

    def flush() -> None:
        nonlocal used, reopened
        if any(line.strip() for line in (current[1:] if reopened else current)):
            parts.append("\n".join([*current, FENCE] if in_code else current))
        current.clear()
        used, reopened = 0, in_code
        if in_code:
            add(FENCE)

    for line in text.split("\n"):
        start = 0  # `line[start:]` is still to place
        while True:
            rest = len(line) - start
            code_after = in_code != (rest == len(FENCE) and line.startswith(FENCE, start))
            reserve = len(FENCE) + 1 if code_after else 0  # room to close the fence
            separator = 1 if current else 0
            if used + separator + rest + reserve <= limit:
                add(line[start:])
                in_code = code_after
                break
            if current and current != [FENCE]:
                flush()  # the line may fit in a part of its own
                continue
            head_end, rest_start = _cut(line, start, limit - used - separator - reserve)
            add(line[start:head_end])
            flush()
            start = rest_start
            if start >= len(line):
                break
    flush()
    return parts or [""]


def _cut(line: str, start: int, room: int) -> tuple[int, int]:
    """Where the head of `line[start:]` ends, within `room` and at a space if one is near, never
    inside `&…;` or `<…>`, and where the rest starts (blanks at the cut dropped)."""
    cut = start + room
    space = line.rfind(" ", start + room // 2, cut + 1)
    if space > start:
        cut = space
    for opener, closer in (("&", ";"), ("<", ">")):
        begin = line.rfind(opener, start, cut)
        if begin > start and line.find(closer, begin, cut) < 0:
            cut = begin
    blanks = _SPACES.match(line, cut)
    return start + len(line[start:cut].rstrip(" ")), blanks.end() if blanks else cut


def render_message(
    text: str, mentions: Sequence[str], workspace: Workspace, limit: int = MAX_CHARS
) -> list[str]:
    """The Slack texts of one outbound message: the intended mentions first, then the model's
    text as harmless mrkdwn, split into parts. Raises RenderError for an unknown recipient."""
    body = to_mrkdwn(text)
    prefix = mention_prefix(mentions, workspace)
    if prefix:
        body = f"{prefix}{chr(10) if body.startswith(FENCE) else ' '}{body}"
    return split(body, limit)


def message_ref(event_id: str | None) -> tuple[str, str] | None:
    """The channel and `ts` of a Slack message event id (`slack:<team>:<channel>:<ts>`, an
    edit's `…~<time>` included), or None for anything else."""
    match = _MESSAGE_EVENT.match(event_id or "")
    return (match.group(1), match.group(2)) if match else None


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a message goes: the channel, the thread root's `ts` (None: top level), and
    whether a thread reply is also shown in the channel (`reply_broadcast`)."""

    channel: str
    thread_ts: str | None = None
    broadcast: bool = False


def place(
    action: Post | Working, replied: ChatEvent | None = None, *, reply_in_thread: bool = True
) -> Placement:
    """Where a reply goes (a `Working` indicator goes where a reply with visibility `thread`
    would).

    In a thread when the action names one, when its conversation is written `<channel>/<ts>`,
    or when the message it answers is in one. A reply to a top-level message with visibility
    `thread` goes into that message's thread when `reply_in_thread` (the channel's setting,
    default on), otherwise into the channel; visibility `channel` posts in the channel (a
    thread reply is also broadcast to it). DMs are not threaded on their own. `replied` is the
    answered event when the host knows it; otherwise its id is read for the message `ts`.
    """
    channel, _, conversation_thread = action.conversation.partition("/")
    thread = action.thread or conversation_thread or None
    if thread is None and replied is not None and replied.conversation.thread_id:
        thread = replied.conversation.thread_id
    visibility = action.visibility if isinstance(action, Post) else "thread"
    if thread is None and visibility == "thread" and reply_in_thread:
        is_dm = channel.startswith("D") or (
            replied is not None and replied.conversation.kind is ConversationKind.DM
        )
        ref = message_ref(action.in_reply_to)
        replied_ts = replied.message_id if replied is not None else (ref[1] if ref else None)
        if replied_ts and not is_dm:
            thread = replied_ts
    return Placement(
        channel, str(thread) if thread else None, visibility == "channel" and bool(thread)
    )
