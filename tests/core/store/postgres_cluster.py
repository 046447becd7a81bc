"""A throwaway PostgreSQL cluster for the tests: `initdb` in a temporary folder, a server that
listens only on a Unix socket in that folder (no TCP port to collide with), a fresh database on
demand, and everything stopped and removed after.

PostgreSQL refuses to run as root, so when the tests run as root the server runs as the
`postgres` user that Debian's package creates. Without PostgreSQL installed the tests that need
it fail with how to install it: CI installs it (`make test`), so a skip would hide a gap.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["INSTALL_HINT", "Cluster", "NotInstalled", "throwaway"]

INSTALL_HINT = (
    "PostgreSQL is not installed: `make test` installs it (Debian: apt-get install postgresql), "
    "or put its bin folder (the one with initdb and pg_ctl) on PATH"
)
START_TIMEOUT = 60


class NotInstalled(RuntimeError):
    """PostgreSQL's server programs are not on this machine."""


def bin_folder() -> Path:
    """Where `initdb`, `pg_ctl` and `postgres` are: `pg_config --bindir`, else Debian's
    `/usr/lib/postgresql/<version>/bin` (the newest), else PATH."""
    found: list[Path] = []
    if shutil.which("pg_config"):
        answer = subprocess.run(
            ["pg_config", "--bindir"], capture_output=True, text=True, check=False
        )
        found.append(Path(answer.stdout.strip()))
    versions = glob.glob("/usr/lib/postgresql/*/bin")
    found.extend(Path(p) for p in sorted(versions, key=_version, reverse=True))
    on_path = shutil.which("initdb")
    if on_path:
        found.append(Path(on_path).resolve().parent)
    for folder in found:
        if (folder / "initdb").exists() and (folder / "pg_ctl").exists():
            return folder
    raise NotInstalled(INSTALL_HINT)


def _version(folder: str) -> tuple[int, ...]:
    number = Path(folder).parent.name
    return tuple(int(part) for part in number.split(".") if part.isdigit())


class Cluster:
    """One server for the test session; `database()` gives each test a database of its own."""

    def __init__(self) -> None:
        self.bin = bin_folder()
        self.folder = Path(tempfile.mkdtemp(prefix="c2a-pg-"))
        self.data = self.folder / "data"
        self.user = _server_user()
        self._made = 0
        self._started = False

    def start(self) -> None:
        """initdb and start the server; raises RuntimeError with the server's log if it fails."""
        if self.user is not None:
            record = pwd.getpwnam(self.user)
            os.chown(self.folder, record.pw_uid, record.pw_gid)
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-U",
            "postgres",
            "--auth=trust",
            "--encoding=UTF8",
            "--no-sync",
            "--no-instructions",
        )
        self.start_server()

    def start_server(self) -> None:
        """Start the server on the cluster's data (again, after `stop_server`): the same
        socket, so every URL handed out before reaches it again."""
        # Only the socket in the folder: no TCP listener. fsync off: the cluster is thrown away.
        options = f"-k {self.folder} -c listen_addresses='' -c fsync=off -c full_page_writes=off"
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.folder / "server.log"),
            "-t",
            str(START_TIMEOUT),
            "-w",
            "start",
        )
        self._started = True

    def stop_server(self, mode: str = "fast") -> None:
        """Stop the server, keeping its data: `fast` (the default) rolls back what is open and
        ends every connection, as a restart by an operator does; `immediate` is a crash."""
        self._run(
            "pg_ctl", "-D", str(self.data), "-m", mode, "-t", str(START_TIMEOUT), "-w", "stop"
        )
        self._started = False

    def url(self, database: str = "postgres") -> str:
        """A libpq URL for `database`, through the cluster's socket, as its superuser."""
        return f"postgresql://postgres@/{database}?host={self.folder}"

    def database(self) -> str:
        """A new, empty database; its URL."""
        import psycopg

        self._made += 1
        name = f"test_{self._made}"
        with psycopg.connect(self.url(), autocommit=True) as connection:
            connection.execute(f"CREATE DATABASE {name} TEMPLATE template0")
        return self.url(name)

    def stop(self) -> None:
        """Stop the server at once and remove the folder."""
        try:
            if self._started:
                self.stop_server("immediate")
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin / program), *args]
        if self.user is not None:
            command = ["runuser", "-u", self.user, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            log = self.folder / "server.log"
            told = log.read_text() if log.exists() else ""
            raise RuntimeError(f"{program} failed: {done.stdout}{done.stderr}{told}")


def throwaway() -> Iterator[Cluster]:
    """A server of its own for a test module that stops and starts it (a fixture's body):
    started, handed out, then stopped and removed."""
    cluster = Cluster()
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


def _server_user() -> str | None:
    """Who runs the server: `postgres` when the tests run as root, else the tests' own user."""
    if os.geteuid() != 0:
        return None
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        raise NotInstalled(
            "PostgreSQL will not run as root and there is no `postgres` user to run it as: "
            + INSTALL_HINT
        ) from None
    return "postgres"
