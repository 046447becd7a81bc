"""Reading the project's YAML files (manifests and the shipped definitions) safely: bounded work,
no ambiguous keys, and every refusal one ManifestError line naming the file, the place and why.

PyYAML's SafeLoader builds only plain data, yet it accepts what a manifest must not hold:

- aliases (`*name`), which let a few hundred bytes stand for a billion values ("billion laughs")
  or for a list that contains itself; every reader of the result (pydantic, `json.dumps`, a
  harness's settings) then walks the expansion. They are refused outright: a manifest gains
  nothing from them that writing the value out does not give, and any budget of aliases would
  need a second bound on what they expand to (thirty aliases, each doubling the one before,
  already stand for a billion values) and a check for cycles;
- duplicate keys, of which the last silently wins;
- keys that are not text (`123:`, `yes:`, `~:`, `? [a, b]`), which no manifest key can be;
- nesting deep enough to exhaust Python's stack while composing;
- more bytes or more values than any manifest has, which only cost time to read.

Each is refused while the document is composed, before any value is built, so the work done on
a hostile file is bounded by `MAX_BYTES` and `MAX_NODES` (well under a second here).

`read_placed` also says on which line each value stands, by its key path, so that a problem
found later (a manifest that does not validate) can name the line too (`line_of`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, Protocol

import yaml
from yaml.nodes import Node

from core.errors import ManifestError

__all__ = [
    "MAX_BYTES",
    "MAX_DEPTH",
    "MAX_NODES",
    "Lines",
    "Placed",
    "key_path",
    "line_of",
    "parse_placed",
    "parse_yaml",
    "read_placed",
    "read_yaml",
]

Lines = Mapping[tuple[object, ...], int]
"""The 1-based line each value starts on, by its key path (`()` for the document)."""

# The example team.yaml (three agents) is 2 KB; a file past this is a mistake or an attack.
MAX_BYTES = 1 << 20
# The deepest manifest key is six levels down; harness settings may nest a few more.
MAX_DEPTH = 32
# Keys, values and list items together; the example team.yaml has 134, and a hundred
# fully configured agents about 5,000.
MAX_NODES = 20_000
# An error message shows at most this many characters of one key.
KEY_SHOWN = 40

_STR = "tag:yaml.org,2002:str"
_CORE_TAGS = "tag:yaml.org,2002:"


class Mark(Protocol):
    """Where in the text a problem is, as PyYAML's marks (0-based) say."""

    @property
    def line(self) -> int: ...

    @property
    def column(self) -> int: ...


@dataclass(frozen=True, slots=True)
class _At:
    line: int
    column: int


def _end_of(text: str) -> _At:
    """Where the character after `text` is."""
    return _At(text.count("\n"), len(text) - (text.rfind("\n") + 1))


@dataclass(frozen=True, slots=True)
class Placed:
    """A YAML document's plain data and the line each of its values starts on."""

    data: Any
    lines: Lines


def line_of(lines: Lines, path: Sequence[object]) -> int | None:
    """The line of the value at `path`, or of the nearest mapping or list holding it (a key
    that is missing, or a value a check looked at as a whole); None when that is the whole
    document, or nothing is known."""
    parts = tuple(path)
    while parts not in lines and parts:
        parts = parts[:-1]
    return lines.get(parts) if parts else None


def read_yaml(path: str | Path) -> Any:
    """The plain data in a YAML file of at most MAX_BYTES; raises ManifestError (file, line,
    column, key path and why) for anything unreadable or refused (see the module docstring)."""
    return read_placed(path).data


def read_placed(path: str | Path) -> Placed:
    """`read_yaml`, with the line each value starts on."""
    source = str(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ManifestError(
            f"{source}: cannot read: {exc.strerror or exc}", {"file": source}
        ) from None
    return parse_placed(data, source)


def parse_yaml(data: bytes, source: str) -> Any:
    """The plain data in one YAML document given as UTF-8 bytes; raises ManifestError like
    `read_yaml`. The work is linear in `len(data)`, which is refused past MAX_BYTES."""
    return parse_placed(data, source).data


def parse_placed(data: bytes, source: str) -> Placed:
    """`parse_yaml`, with the line each value starts on."""
    if len(data) > MAX_BYTES:
        raise ManifestError(
            f"{source}: larger than {MAX_BYTES} bytes; a manifest is a few KiB",
            {"file": source, "limit": MAX_BYTES},
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        where = _end_of(data[: exc.start].decode("utf-8"))  # the valid text before the bad byte
        why = f"not UTF-8 text (byte {data[exc.start]:#04x}); save the file as UTF-8"
        raise _refusal(source, where, None, why) from None
    try:
        loader = _Loader(text, source)
        try:
            return Placed(loader.get_single_data(), loader.lines)
        finally:
            loader.dispose()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = ", ".join(part for part in (exc.context, exc.problem) if part) or "unreadable"
        raise _refusal(source, mark, None, f"not valid YAML: {problem}") from None
    except yaml.reader.ReaderError as exc:
        why = f"not valid YAML: character U+{exc.character:04X} is not allowed"
        raise _refusal(source, _end_of(text[: exc.position]), None, why) from None
    except yaml.YAMLError as exc:
        raise ManifestError(f"{source}: not valid YAML: {exc}", {"file": source}) from None


def key_path(parts: Sequence[object]) -> str:
    """Key path for a message, `agents.lead.roles.0`: each key escaped (no control characters
    reach a terminal) and cut to KEY_SHOWN characters; `(top level)` for the root."""
    return ".".join(_shown(part) for part in parts) or "(top level)"


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses, while composing, what the module docstring lists."""

    def __init__(self, text: str, source: str) -> None:
        super().__init__(text)
        self.source = source
        self.path: list[object] = []  # keys and indexes from the root to the node composed
        self.keys: list[dict[str, Mark]] = []  # per open mapping, where each key was first
        self.lines: dict[tuple[object, ...], int] = {}  # each value's line, by its path
        self.nodes = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node | None:
        event: yaml.Event = self.peek_event()  # type: ignore[no-untyped-call]
        self.nodes += 1
        if self.nodes > MAX_NODES:
            self.refuse(event.start_mark, f"more than {MAX_NODES} keys and values")
        if isinstance(parent, yaml.MappingNode) and index is None:
            return self.compose_key(parent, event)
        if parent is not None:
            self.path.append(index.value if isinstance(index, Node) else index)
        if event.start_mark is not None:
            self.lines[tuple(self.path)] = event.start_mark.line + 1
        if isinstance(event, yaml.AliasEvent):
            self.refuse(
                event.start_mark,
                f"aliases (*{_shown(event.anchor)}) are not allowed; write the value out",
            )
        if len(self.path) > MAX_DEPTH:
            self.refuse(event.start_mark, f"nested deeper than {MAX_DEPTH} levels")
        mapping = isinstance(event, yaml.MappingStartEvent)
        if mapping:
            self.keys.append({})
        node = super().compose_node(parent, index)
        # A refusal ends the whole load, so these are only unwound on success.
        if mapping:
            self.keys.pop()
        if parent is not None:
            self.path.pop()
        return node

    def compose_key(self, mapping: yaml.MappingNode, event: yaml.Event) -> Node:
        """A key of `mapping`: plain text, once."""
        if not isinstance(event, yaml.ScalarEvent):
            self.refuse(event.start_mark, "a key must be text, not an alias, a list or a mapping")
        # PyYAML composes every key with index None; its stubs say int.
        key = super().compose_node(mapping, None)  # type: ignore[arg-type]
        assert key is not None  # a scalar event always composes to a node
        if key.tag != _STR:
            kind = key.tag.removeprefix(_CORE_TAGS)
            self.refuse(
                key.start_mark,
                f"key {_quoted(key.value)} reads as {_shown(kind)}, not text; quote it",
            )
        seen = self.keys[-1]
        first = seen.get(key.value)
        if first is not None:
            self.refuse(
                key.start_mark,
                f"key {_quoted(key.value)} appears twice (first at line {first.line + 1}, "
                f"column {first.column + 1}); keep one",
            )
        seen[key.value] = key.start_mark
        return key

    def construct_object(self, node: Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, TypeError, AttributeError, OverflowError) as exc:
            # PyYAML's scalar constructors raise these for what a resolver or an explicit tag
            # let through: a 13th month, a 5,000-digit integer, `!!timestamp soon`.
            kind = str(node.tag).removeprefix(_CORE_TAGS)
            self.refuse(
                node.start_mark,
                f"cannot read {_quoted(node.value)} as {_shown(kind)}: {_shown(exc)}",
                known_path=False,
            )

    def refuse(self, mark: Mark | None, why: str, *, known_path: bool = True) -> NoReturn:
        raise _refusal(self.source, mark, self.path if known_path else None, why)


def _refusal(
    source: str, mark: Mark | None, path: Sequence[object] | None, why: str
) -> ManifestError:
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
    place = f"{key_path(path)}: " if path else ""
    details: dict[str, Any] = {"file": source}
    if mark:
        details.update(line=mark.line + 1, column=mark.column + 1)
    if path:
        details["path"] = key_path(path)
    return ManifestError(f"{source}: {where}{place}{why}", details)


def _shown(part: object) -> str:
    """One key or value as a message shows it: short, on one line, nothing a terminal obeys."""
    text = _clipped(part)
    return text if text.isprintable() else repr(text)


def _quoted(part: object) -> str:
    """Like `_shown`, always in quotes: `'workspace'`."""
    return repr(_clipped(part))


def _clipped(part: object) -> str:
    text = str(part)
    return text if len(text) <= KEY_SHOWN else text[:KEY_SHOWN] + "..."
