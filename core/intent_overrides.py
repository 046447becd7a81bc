"""A manifest's `intent` key: how it changes the phrase and pattern tables of the intent rules.

Shape: `{"thanks": {"add": ["merci"], "remove": ["cool"]}, "urgent": {"patterns_add":
["sev ?[12]"]}}`. `add`/`remove` change phrases, `patterns_add` appends patterns. Unknown
intents and keys, a bare string instead of a list, an empty entry and removing a phrase that
is not there are refused with a ValueError naming them (`core.intent.IntentRules.with_overrides`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.intent_tables import Intent

__all__ = ["OVERRIDE_KEYS", "normalise_phrase", "overridden"]

OVERRIDE_KEYS = ("add", "remove", "patterns_add")

Tables = Mapping[Intent, tuple[str, ...]]


def normalise_phrase(phrase: str) -> str:
    """A phrase as the rules hold it: case-folded, its spaces collapsed."""
    return " ".join(phrase.casefold().split())


def _intent(name: str, change: object) -> Intent:
    if not isinstance(change, Mapping):
        raise ValueError(f"intent.{name} must be a mapping of {', '.join(OVERRIDE_KEYS)}")
    try:
        return Intent(name)
    except ValueError:
        known = ", ".join(i.value for i in Intent)
        raise ValueError(
            f"unknown intent {name!r} in intent overrides; known intents: {known}"
        ) from None


def _values(name: str, key: str, values: Sequence[str]) -> Sequence[str]:
    if key not in OVERRIDE_KEYS:
        raise ValueError(
            f"unknown key {key!r} under intent.{name}; use one of: " + ", ".join(OVERRIDE_KEYS)
        )
    if isinstance(values, str) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"intent.{name}.{key} must be a list of strings")
    return values


def overridden(
    phrases: Tables, patterns: Tables, overrides: Mapping[str, Mapping[str, Sequence[str]]]
) -> tuple[Tables, Tables]:
    """`phrases` and `patterns` changed by `overrides` (the module docstring); ValueError on a
    bad override."""
    new_phrases = {i: list(phrases[i]) for i in Intent}
    new_patterns = {i: list(patterns[i]) for i in Intent}
    for name, change in overrides.items():
        intent = _intent(name, change)
        for key, values in change.items():
            for value in _values(name, key, values):
                if not value.strip():
                    raise ValueError(f"intent.{name}.{key} contains an empty entry")
                if key == "add":
                    new_phrases[intent].append(normalise_phrase(value))
                elif key == "patterns_add":
                    new_patterns[intent].append(value)
                elif normalise_phrase(value) in new_phrases[intent]:
                    new_phrases[intent].remove(normalise_phrase(value))
                else:
                    raise ValueError(f"intent.{name}.remove: {value!r} is not a phrase of {name}")
    return (
        {i: tuple(dict.fromkeys(p)) for i, p in new_phrases.items()},
        {i: tuple(p) for i, p in new_patterns.items()},
    )
