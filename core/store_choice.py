"""Which store a workspace's ledger lives in: the manifest's `store:`, else the environment,
else SQLite.

`store:` in the manifest is a URL, or a reference to the environment variable that holds one
(`store: {url_env: C2A_DATABASE_URL}`), as tokens are referenced; a URL written in the manifest
may not carry a password (libpq's `PGPASSWORD` or `~/.pgpass` can, or the whole URL can move
to an environment variable). Without `store:`, `$C2A_DATABASE_URL` chooses; without that,
the ledger is the SQLite file the caller names. URLs: `postgresql://...` (or `postgres://`),
`sqlite` (that default file) and `sqlite:///PATH` (a file of one's own).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from core.errors import ManifestError, StoreError
from core.sqlite_store import SQLiteStore
from core.store import Store

__all__ = ["DATABASE_ENV", "StoreReference", "StoreSetting", "open_store", "store_url"]

DATABASE_ENV = "C2A_DATABASE_URL"
_POSTGRES = ("postgresql", "postgres")


class StoreReference(BaseModel):
    """`store: {url_env: NAME}`: the store's URL is in that environment variable."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url_env: str = Field(min_length=1)


def _checked(setting: str | StoreReference) -> str | StoreReference:
    """A manifest's `store:` as written, refused when c2a cannot use it or it holds a secret."""
    if isinstance(setting, str):
        _scheme(setting)
        if urlsplit(setting).password:
            raise ValueError(
                "a store URL in the manifest may not hold a password: put the URL in an "
                "environment variable and write `store: {url_env: NAME}`, or use PGPASSWORD"
            )
    return setting


StoreSetting = Annotated[str | StoreReference, AfterValidator(_checked)]


def store_url(setting: str | StoreReference | None, environ: Mapping[str, str]) -> str | None:
    """The store URL a workspace uses (None: SQLite's default file); raises ManifestError
    when the manifest names a variable that is unset, or the environment's URL is unusable."""
    if isinstance(setting, StoreReference):
        url = environ.get(setting.url_env, "")
        if not url:
            raise ManifestError(
                f"store.url_env names {setting.url_env}, which is not set: export the store's "
                "URL there (docs/deploy.md)"
            )
    else:
        url = setting or environ.get(DATABASE_ENV, "")
    if not url:
        return None
    try:
        _scheme(url)
    except ValueError as exc:
        raise ManifestError(f"the store URL: {exc}") from None
    return url


def open_store(url: str | None, default_path: str, schema: str) -> Store:
    """The (unopened) store `url` names: SQLite at `default_path` when None or `sqlite`,
    SQLite at the path of a `sqlite:///` URL, or PostgreSQL with this workspace's tables in
    the PostgreSQL schema `schema`."""
    if url is None or url == "sqlite":
        return SQLiteStore(default_path)
    if _scheme(url) == "sqlite":
        return SQLiteStore(urlsplit(url).path)
    try:
        from core.postgres_store import PostgresStore
    except ImportError:
        raise StoreError(
            "the store is PostgreSQL, and psycopg is not installed: pip install 'c2a[postgres]'"
        ) from None
    return PostgresStore(url, schema=schema)


def _scheme(url: str) -> str:
    """`sqlite` or `postgresql`; raises ValueError for anything else."""
    scheme = urlsplit(url).scheme
    if url == "sqlite" or (scheme == "sqlite" and urlsplit(url).path):
        return "sqlite"
    if scheme in _POSTGRES:
        return "postgresql"
    named = f"{scheme}://..." if scheme else "a URL without a scheme"
    raise ValueError(f"{named} is not a store c2a knows: postgresql://..., sqlite, sqlite:///PATH")
