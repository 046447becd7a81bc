"""The background install of the `local` extra, as `make run` starts it and `c2a run` watches it.

`make run` starts `pip install` of the extra (llama-cpp-python compiles for minutes) in the
background and `c2a run` at once, with `C2A_MODEL_INSTALL` naming the install's log file. Beside
the log, the install keeps two small files:

    <log>.pid    the installing shell's process id; written first, its time is the start
    <log>.exit   its exit status, written when it ends ("0" when it worked)

`Install.state` reads them: `building` while the process lives and has not ended, `installed`
after a 0, `failed` after anything else or when the process is gone without an exit status.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal

__all__ = ["INSTALL_ENV", "Install", "InstallState"]

INSTALL_ENV: Final = "C2A_MODEL_INSTALL"

InstallState = Literal["building", "installed", "failed"]


@dataclass(frozen=True, slots=True)
class Install:
    """One background install, known by its log file."""

    log: Path

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Install | None:
        """The install named by `C2A_MODEL_INSTALL`, if any."""
        named = environ.get(INSTALL_ENV, "").strip()
        return cls(Path(named)) if named else None

    @property
    def pid_file(self) -> Path:
        return self.log.with_name(self.log.name + ".pid")

    @property
    def exit_file(self) -> Path:
        return self.log.with_name(self.log.name + ".exit")

    def started(self) -> float | None:
        """When the install began (Unix seconds), if known."""
        try:
            return self.pid_file.stat().st_mtime
        except OSError:
            return None

    def state(self) -> InstallState:
        """Where the install is now."""
        status = _read(self.exit_file)
        if status is not None:
            return "installed" if status == "0" else "failed"
        pid = _read(self.pid_file)
        if pid is not None and pid.isdigit() and _alive(int(pid)):
            # The exit file may have been written between the two reads.
            return "building" if _read(self.exit_file) is None else self.state()
        return "failed"

    def failure(self) -> str:
        """Why the install failed, for a person: its exit status and where its log is."""
        status = _read(self.exit_file)
        ended = f"ended with status {status}" if status else "stopped without finishing"
        return f"installing the bundled model {ended}; its log is {self.log}"


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, and another user's
        return True
    except OverflowError:
        return False
    return True
