"""Numbered schema migrations, the same rule for every backend.

Each backend keeps its own list (`core.sqlite.schema.MIGRATIONS`,
`core.postgres.schema.MIGRATIONS`), numbered from 1 without gaps. A store applies on open the
migrations its database has not recorded yet, in order, each in the transaction that records it
in the `schema_migrations` table, so a failed migration leaves the database at the version
before it. A database that records a version newer than the code knows is refused: an older
c2a must not write a schema it does not understand.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from core.errors import StoreError

__all__ = ["RECORD_TABLE", "Migration", "latest", "to_apply"]

# Where a database records the migrations applied to it: (version, name, applied_at).
RECORD_TABLE = "schema_migrations"


@dataclass(frozen=True, slots=True)
class Migration:
    """One step of a backend's schema: its number, what it does in a few words, its SQL."""

    version: int
    name: str
    sql: str


def latest(migrations: Sequence[Migration]) -> int:
    """The version a database is at once every migration is applied; checks the numbering."""
    numbers = [migration.version for migration in migrations]
    if numbers != list(range(1, len(numbers) + 1)):
        raise ValueError(f"migrations must be numbered 1, 2, 3, ... without gaps: {numbers}")
    return len(numbers)


def to_apply(current: int, migrations: Sequence[Migration], where: str) -> list[Migration]:
    """The migrations after `current` (the version `where` records), in order; raises
    `StoreError` when `where` is newer than every migration here."""
    newest = latest(migrations)
    if current > newest:
        raise StoreError(
            f"the ledger at {where} is at schema version {current}, newer than this c2a knows "
            f"({newest}): run the c2a that wrote it, or a newer one"
        )
    return list(migrations[current:])
