"""What a harness process is given of the environment c2a runs in.

The few variables any program needs (`BASE`), those its settings pass by name (`pass_env`: an
API key, kept out of the manifest), then its own `env`. Nothing else: the environment c2a runs
in holds the platforms' tokens and the database's URL, and a harness, or the model driving a
shell inside one, has no business reading them. The ACP SDK starts an agent with its own such
base, so the `acp` backend hands it only what is passed; the `stdio` backend builds the whole.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from core.errors import ManifestError

__all__ = ["BASE", "passed_environment", "process_environment", "variable_names"]

BASE: Final = (
    "HOME", "LANG", "LC_ALL", "LC_CTYPE", "LOGNAME", "PATH", "SHELL", "TERM", "TMPDIR", "TZ", "USER"
)  # fmt: skip


def variable_names(names: list[str]) -> list[str]:
    """`names` when each is an environment variable's name; ValueError naming one that is not
    (for a settings model's validator)."""
    for name in names:
        if not name or "=" in name or "\0" in name:
            raise ValueError(f"{name!r} is not an environment variable's name")
    return names


def passed_environment(
    agent: str, environ: Mapping[str, str], passed: Sequence[str], env: Mapping[str, str]
) -> dict[str, str]:
    """`environ`'s values of the `passed` names, then `env`; ManifestError naming each passed
    name that `environ` lacks."""
    missing = [name for name in passed if name not in environ]
    if missing:
        raise ManifestError(
            f"agents.{agent}.harness.pass_env: {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} not set in the environment c2a runs in"
        )
    return {**{name: environ[name] for name in passed}, **env}


def process_environment(
    agent: str, environ: Mapping[str, str], passed: Sequence[str], env: Mapping[str, str]
) -> dict[str, str]:
    """The whole environment of a harness process: `BASE` from `environ`, then as
    `passed_environment`."""
    base = {name: environ[name] for name in BASE if name in environ}
    return {**base, **passed_environment(agent, environ, passed, env)}
