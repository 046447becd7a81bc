"""Fuzzing the manifest boundary: any bytes through the YAML loader, the validator and what
`c2a check` prints. Only ManifestError escapes, every line of it names the file, and each call
finishes within the bound."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml
from bounds import timed
from hostile_yaml import BILLION_LAUGHS
from hypothesis import example, given
from hypothesis import strategies as st

from c2a.platforms import installed
from core.errors import ManifestError
from core.manifest import Workspace, parse_manifest
from core.yaml_safe import MAX_DEPTH, parse_yaml
from harness_bridge.backends.registry import available

ROOT = Path(__file__).resolve().parents[2]
SEEDS = [
    (ROOT / "manifests" / "examples" / "team.yaml").read_bytes(),
    (ROOT / "manifests" / "workspaces" / "local.yaml").read_bytes(),
]
PARSED = [yaml.safe_load(seed) for seed in SEEDS]
BACKENDS = available()
SOURCE = "fuzz.yaml"

# Pieces of YAML syntax that reach the loader's refusals and PyYAML's corners.
SYNTAX = [
    b"&a ", b"*a", b"!!str ", b"!!binary ", b"!!timestamp ", b"!!python/object ", b"!x ",
    b": ", b"? ", b"- ", b"<<: ", b"[", b"]", b"{", b"}", b",", b"#", b"|", b">", b"'", b'"',
    b"\t", b"\n", b"  ", b"---\n", b"...\n", b"%YAML 1.1\n", b"~", b"yes", b"2026-13-45",
    b"9" * 5000, b"[" * (MAX_DEPTH + 2), b"\xff", b"\xc3", b"\x00", b"\x1b[2J", b"\xef\xbb\xbf",
]  # fmt: skip

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats()
    | st.text(max_size=20)
    | st.binary(max_size=8)
    | st.dates()
)
keys = st.text(max_size=12) | st.integers() | st.booleans() | st.none() | st.dates()
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=30,
)


def check_output(data: bytes) -> list[str]:
    """What `c2a check` prints for a file's bytes: its description, or the error's lines."""
    try:
        manifest = parse_manifest(
            parse_yaml(data, SOURCE), SOURCE, backends=BACKENDS, platforms=installed()
        )
    except ManifestError as exc:
        return str(exc).split("\n")
    return Workspace.from_manifest(manifest, installed()).describe()


def check(data: bytes) -> None:
    lines = timed("loading and validating a manifest", lambda: check_output(data))
    assert lines
    if not lines[-1].startswith("attention: "):  # refused: each line names the file
        assert all(line.startswith(f"{SOURCE}: ") for line in lines), lines


def dumped(value: Any, unicode: bool) -> bytes:
    return yaml.safe_dump(value, sort_keys=False, allow_unicode=unicode).encode()


@st.composite
def mutated_seeds(draw: st.DrawFn) -> bytes:
    """A shipped manifest with a few bytes inserted, deleted or a line repeated."""
    text = draw(st.sampled_from(SEEDS))
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(text)))
        edit = draw(st.sampled_from(["insert", "delete", "repeat line"]))
        if edit == "insert":
            piece = draw(st.sampled_from(SYNTAX) | st.binary(min_size=1, max_size=8))
            text = text[:at] + piece + text[at:]
        elif edit == "delete":
            text = text[:at] + text[at + draw(st.integers(1, 16)) :]
        else:
            start = text.rfind(b"\n", 0, at) + 1
            end = text.find(b"\n", at) + 1 or len(text)
            text = text[:end] + text[start:end] + text[end:]
    return text


@st.composite
def replaced_values(draw: st.DrawFn) -> bytes:
    """A shipped manifest, parsed, with one value somewhere in it replaced, dumped again."""
    data = copy.deepcopy(draw(st.sampled_from(PARSED)))
    node: Any = data
    while True:
        places = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not places:
            break
        place = draw(st.sampled_from(places))
        if isinstance(node[place], dict | list) and draw(st.booleans()):
            node = node[place]
            continue
        node[place] = draw(values)
        break
    return dumped(data, draw(st.booleans()))


@given(st.binary(max_size=2000))
@example(BILLION_LAUGHS)
@example(b"a: &a [*a]\n")
@example(b"version: 1\nworkspace: w\n" + b"[" * 100_000)
@example(b"\xff\xfe" + "version: 1\n".encode("utf-16-le"))
def test_random_bytes(data: bytes) -> None:
    check(data)


@given(values, st.booleans())
def test_random_structures_dumped_to_yaml(value: Any, unicode: bool) -> None:
    check(dumped(value, unicode))


@given(mutated_seeds())
def test_mutated_shipped_manifests(data: bytes) -> None:
    check(data)


@given(replaced_values())
def test_shipped_manifests_with_one_value_replaced(data: bytes) -> None:
    check(data)
