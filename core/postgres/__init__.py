"""The PostgreSQL store's parts, one module per `core.store` Protocol, each a mixin on the one
shared `Connection` (as in `core.sqlite`); `core.postgres_store.PostgresStore` puts them
together. psycopg is imported only here, so SQLite users need not install it."""
