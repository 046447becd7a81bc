"""Reading YAML safely: each refusal is one ManifestError line naming file, place and why."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hostile_yaml import BILLION_LAUGHS, BILLION_LAUGHS_REFUSAL

from core.errors import ManifestError
from core.yaml_safe import (
    MAX_BYTES,
    MAX_DEPTH,
    MAX_NODES,
    line_of,
    parse_placed,
    parse_yaml,
    read_yaml,
)

ROOT = Path(__file__).resolve().parents[2]


def refusal(text: str | bytes) -> str:
    data = text.encode() if isinstance(text, str) else text
    with pytest.raises(ManifestError) as caught:
        parse_yaml(data, "m.yaml")
    message = str(caught.value)
    assert message.startswith("m.yaml: ") and "\n" not in message
    return message


def test_a_billion_laughs_is_refused_at_its_first_alias_before_anything_is_built() -> None:
    assert refusal(BILLION_LAUGHS) == f"m.yaml: {BILLION_LAUGHS_REFUSAL}"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: &a [*a]\n", "line 1, column 8: a.0: aliases (*a) are not allowed"),
        ("base: &b {x: 1}\nmore: {<<: *b}\n", "line 2, column 8: more: key '<<' reads as merge"),
        ("k: &k key\n*k : 1\n", "line 2, column 1: a key must be text, not an alias"),
    ],
)
def test_every_alias_is_refused_whatever_it_points_at(text: str, expected: str) -> None:
    assert expected in refusal(text)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "version: 1\nworkspace: w\nworkspace: x\n",
            "m.yaml: line 3, column 1: key 'workspace' appears twice (first at line 2, column 1)",
        ),
        (
            "agents:\n  a:\n    harness: {backend: openai, model: x, model: y}\n",
            "line 3, column 42: agents.a.harness: key 'model' appears twice (first at line 3, "
            "column 32); keep one",
        ),
        (
            "agents:\n  - x: 1\n    'x': 2\n",
            "line 3, column 5: agents.0: key 'x' appears twice",
        ),
    ],
)
def test_duplicate_keys_are_refused_at_any_depth(text: str, expected: str) -> None:
    assert expected in refusal(text)


def test_the_same_key_in_sibling_mappings_is_no_duplicate() -> None:
    text = "agents:\n  a: {roles: [x]}\n  b: {roles: [x]}\n"
    assert parse_yaml(text.encode(), "m.yaml") == {
        "agents": {"a": {"roles": ["x"]}, "b": {"roles": ["x"]}}
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "channels:\n  800000000000000010: {}\n",
            "channels: key '800000000000000010' reads as int",
        ),
        ("access:\n  yes: 1\n", "access: key 'yes' reads as bool, not text; quote it"),
        ("~: 1\n", "line 1, column 1: key '~' reads as null"),
        ("a:\n  2026-01-01: x\n", "line 2, column 3: a: key '2026-01-01' reads as timestamp"),
        ("a: {!!binary aGk=: x}\n", "key 'aGk=' reads as binary"),
        ("a: {[x, y]: 1}\n", "line 1, column 5: a: a key must be text, not an alias, a list"),
        ("a: {? {x: 1} : 1}\n", "a: a key must be text"),
    ],
)
def test_keys_that_are_not_text_are_refused(text: str, expected: str) -> None:
    assert expected in refusal(text)


def test_a_quoted_or_tagged_number_is_a_text_key() -> None:
    text = "channels:\n  '800000000000000010': {}\n  !!str 42: {}\n"
    assert parse_yaml(text.encode(), "m.yaml") == {"channels": {"800000000000000010": {}, "42": {}}}


def test_nesting_to_the_limit_reads_and_one_level_more_is_refused() -> None:
    def nested(depth: int) -> str:
        return "a: " + "[" * depth + "]" * depth + "\n"

    deepest: list[object] = []
    for _ in range(MAX_DEPTH - 1):
        deepest = [deepest]
    assert parse_yaml(nested(MAX_DEPTH).encode(), "m.yaml") == {"a": deepest}
    assert f"nested deeper than {MAX_DEPTH} levels" in refusal(nested(MAX_DEPTH + 1))
    assert f"nested deeper than {MAX_DEPTH} levels" in refusal(nested(100_000))


def test_more_values_than_the_limit_are_refused() -> None:
    assert f"more than {MAX_NODES} keys and values" in refusal("[" + "1, " * MAX_NODES + "1]")


def test_a_file_over_the_size_limit_is_refused_without_being_parsed(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_bytes(b"# " + b"x" * MAX_BYTES + b"\n")
    with pytest.raises(ManifestError) as caught:
        read_yaml(path)
    assert str(caught.value) == f"{path}: larger than {MAX_BYTES} bytes; a manifest is a few KiB"


def test_a_file_that_cannot_be_read_says_why(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"missing\.yaml: cannot read: No such file"):
        read_yaml(tmp_path / "missing.yaml")
    with pytest.raises(ManifestError, match="cannot read: Is a directory"):
        read_yaml(tmp_path)


def test_invalid_utf8_names_the_line_and_column_of_the_bad_byte() -> None:
    assert refusal(b"version: 1\nworkspace: w\xff\n") == (
        "m.yaml: line 2, column 13: not UTF-8 text (byte 0xff); save the file as UTF-8"
    )


def test_characters_yaml_forbids_are_refused_with_their_place() -> None:
    assert refusal("a: 1\nb: x\x00y\n") == (
        "m.yaml: line 2, column 5: not valid YAML: character U+0000 is not allowed"
    )


def test_syntax_errors_keep_their_place() -> None:
    assert "line 3, column 1: not valid YAML: " in refusal("version: 1\nworkspace: [unclosed\n")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a: 2026-13-45\n", "line 1, column 4: cannot read '2026-13-45' as timestamp: month"),
        ("a: !!timestamp soon\n", "cannot read 'soon' as timestamp"),
        ("a: !!float many\n", "cannot read 'many' as float"),
        ("a: " + "9" * 5000 + "\n", "cannot read '9999999999999999999999999999999999999999...'"),
    ],
)
def test_values_pyyaml_cannot_build_are_refused(text: str, expected: str) -> None:
    assert expected in refusal(text)


def test_control_characters_and_long_keys_are_escaped_and_cut_in_messages() -> None:
    message = refusal('a:\n  "\\e[31mred\\nline": 1\n  "\\e[31mred\\nline": 2\n')
    assert "\x1b" not in message and "'\\x1b[31mred\\nline'" in message
    long_key = "k" * 500
    assert f"key '{'k' * 40}...' appears twice" in refusal(f"{long_key}: 1\n{long_key}: 2\n")


def test_several_documents_are_refused() -> None:
    assert refusal("a: 1\n---\nb: 2\n") == (
        "m.yaml: line 2, column 1: not valid YAML: expected a single document in the stream, "
        "but found another document"
    )


@pytest.mark.parametrize("path", sorted((ROOT / "manifests").rglob("*.yaml")), ids=str)
def test_the_shipped_yaml_files_read_as_before(path: Path) -> None:
    assert read_yaml(path) == yaml.safe_load(path.read_text(encoding="utf-8"))


def test_each_value_s_line_is_known_by_its_path_and_a_missing_key_by_its_mapping() -> None:
    text = b"version: 1\nagents:\n  lead:\n    roles: [a,\n      b]\n  w: {x: 1}\n"
    placed = parse_placed(text, "m.yaml")
    assert placed.data["agents"]["lead"]["roles"] == ["a", "b"]
    assert line_of(placed.lines, ("agents", "lead", "roles", 1)) == 5
    assert line_of(placed.lines, ("agents", "w", "x")) == 6
    assert line_of(placed.lines, ("agents", "lead", "harness", "model")) == 4  # lead's keys
    assert line_of(placed.lines, ("workspace",)) is None  # the whole document: no one line
