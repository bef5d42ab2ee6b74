"""Connect arguments for Airflow's SQLite metadata DB, imported by every Airflow process.

The scheduler, the dag-processor, the api-server and a CLI (`airflow backfill create`) write the
one file. Airflow already puts it in WAL mode (it runs `PRAGMA journal_mode=WAL` on every
connection), so readers never block a writer; writers queue on SQLite's write lock, for up to the
busy timeout set here (60 s instead of Python's 5 s). Waiting costs nothing when the file is free.

The busy timeout alone did not save `backfill create`: it failed at once, after 0 ms of waiting,
with "database is locked". SQLite calls the busy handler (the timeout) only for a transaction
that holds no lock yet. Python's sqlite3 opens its transactions just before the first write, so
that is the usual case; but an SQLAlchemy `session.begin_nested()` sends `SAVEPOINT` first, which
opens a *read* transaction, and the first write after it must upgrade that read to a write while
another process holds the write lock. SQLite refuses such an upgrade at once instead of waiting
(waiting could deadlock, and in WAL mode the read's snapshot may be stale by then). Airflow 3.3
does this in `backfill create` (each backfill run: a savepoint, a SELECT, then the INSERT) and in
the asset manager. `SavepointsWriteFirst` opens such a transaction with `BEGIN IMMEDIATE`
instead: it takes the write lock first, from no lock, where the busy timeout applies; the
savepoint then nests inside it, as it does on PostgreSQL.

Kept to the standard library: Airflow imports this module at the start of each process
(`[database] sql_alchemy_connect_args` and `sql_alchemy_connect_args_async`: aiosqlite passes
the same keywords to `sqlite3.connect`).
"""

from __future__ import annotations

import sqlite3
from typing import Any

__all__ = ["ASYNC_CONNECT_ARGS", "BUSY_TIMEOUT_S", "CONNECT_ARGS", "SavepointsWriteFirst"]

BUSY_TIMEOUT_S = 60.0

_Parameters = Any


def _opens_savepoint(sql: str) -> bool:
    return sql.lstrip()[:9].upper() == "SAVEPOINT"


class _WriteFirstCursor(sqlite3.Cursor):
    """A cursor that starts a savepoint outside any transaction with `BEGIN IMMEDIATE`."""

    def execute(self, sql: str, parameters: _Parameters = (), /) -> _WriteFirstCursor:
        if _opens_savepoint(sql) and not self.connection.in_transaction:
            super().execute("BEGIN IMMEDIATE")  # waits for the write lock (busy timeout)
        super().execute(sql, parameters)
        return self


class SavepointsWriteFirst(sqlite3.Connection):
    """A sqlite3 connection (`sqlite3.connect(factory=...)`) whose outermost savepoint takes the
    write lock as it opens, waiting for it up to the busy timeout, rather than failing at its
    first write (the module's docstring says why)."""

    def cursor(self, factory: Any = _WriteFirstCursor) -> Any:
        return super().cursor(factory)

    def execute(self, sql: str, parameters: _Parameters = (), /) -> Any:
        return self.cursor().execute(sql, parameters)


# Two objects on purpose: Airflow adds check_same_thread=False to the sync one in place.
CONNECT_ARGS: dict[str, Any] = {"timeout": BUSY_TIMEOUT_S, "factory": SavepointsWriteFirst}
ASYNC_CONNECT_ARGS: dict[str, Any] = {"timeout": BUSY_TIMEOUT_S, "factory": SavepointsWriteFirst}
