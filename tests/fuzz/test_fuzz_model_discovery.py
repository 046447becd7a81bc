"""Fuzz: what a model server found on this machine answers, and the ports a person names. Any
`/v1/models` body (JSON of any shape, ids of any kind, deep nesting, bytes that are not UTF-8)
gives a list of short printable model names, never an error; any `C2A_MODEL_PORTS` gives
ports in range or the project's own error (`ManifestError`); each call within the bound."""

from __future__ import annotations

import json
from typing import Any

from bounds import timed
from hypothesis import given
from hypothesis import strategies as st

from core.errors import ManifestError
from harness_bridge.backends.discover import MAX_NAME, PORTS_ENV, models_in, ports_from

_ids = st.one_of(
    st.text(max_size=300),
    st.integers(),
    st.none(),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3),
)
_entries = st.one_of(
    st.fixed_dictionaries({"id": _ids}),
    st.dictionaries(st.text(max_size=8), _ids, max_size=4),
    _ids,
)
_json: Any = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=20)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=20,
)
_bodies = st.one_of(
    st.builds(lambda listed: json.dumps({"data": listed}).encode(), st.lists(_entries, max_size=8)),
    st.builds(lambda value: json.dumps(value).encode(), _json),
    st.builds(lambda depth: b"[" * depth + b"]" * depth, st.integers(0, 200_000)),
    st.binary(max_size=400),
)


@given(_bodies)
def test_any_models_answer_gives_only_printable_names(body: bytes) -> None:
    names = timed("models_in", lambda: models_in(body))
    assert isinstance(names, list)
    for name in names:
        assert isinstance(name, str) and 0 < len(name) <= MAX_NAME
        assert name.isprintable() and not name.isspace()


_digits = st.sampled_from(["0", "7", "11434", "65535", "65536", "²", "١٢", "𝟠", "⁸⁰"])


@given(
    st.one_of(
        st.text(max_size=40),
        st.from_regex(r"[0-9, ]{0,30}", fullmatch=True),
        st.lists(_digits, max_size=4).map(",".join),
    )
)
def test_any_ports_setting_gives_ports_or_one_manifest_error(raw: str) -> None:
    ports: tuple[int, ...] = ()
    try:
        ports = timed("ports_from", lambda: ports_from({PORTS_ENV: raw}))
    except ManifestError as exc:
        refused = str(exc)
    else:
        refused = ""
    assert refused.startswith(f"{PORTS_ENV}=") or not refused
    assert all(isinstance(port, int) and 0 < port < 65536 for port in ports)
