"""The SQLite store's parts, one module per `core.store` Protocol, each a mixin on the one
shared `Connection`; `core.sqlite_store.SQLiteStore` puts them together."""
