"""Connect arguments for Airflow's SQLite metadata DB, imported by every Airflow process.

With the scheduler, the dag-processor, the api-server and a CLI (`airflow backfill create`)
writing the same file on 2 busy cores, SQLite's default 5 s busy timeout is too short: a writer
gave up with "database is locked". Waiting up to a minute for the lock costs nothing when the
file is free. Kept import-free because Airflow imports it at the start of each process
(`[database] sql_alchemy_connect_args`).
"""

BUSY_TIMEOUT_S = 60.0

# Two objects on purpose: Airflow adds check_same_thread=False to the sync one in place.
CONNECT_ARGS = {"timeout": BUSY_TIMEOUT_S}  # sqlite3.connect(timeout=...)
ASYNC_CONNECT_ARGS = {"timeout": BUSY_TIMEOUT_S}  # aiosqlite.connect(timeout=...)
