"""Everything kept in Postgres: the tables and the tenant-scoped Store over them (tables), the pool and
migrations (db, migrations/), row-level security (tenancy), why Postgres refused a value (db_errors),
secrets and their encryption (secrets, crypto), docs and their search (docs), and a session's chat turn
(chat_turns)."""
