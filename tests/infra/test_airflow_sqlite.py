"""The SQLite connect arguments of Airflow's metadata DB (reconf/airflow_sqlite.py), on real
SQLite files in WAL mode (as Airflow keeps its own): a savepoint's write waits for another
process's write lock instead of failing at once, and every Airflow process of the shell's env
line (the CLI included) connects with them."""

from __future__ import annotations

import asyncio
import os
import shlex
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import Column, Integer, MetaData, Table, create_engine, func, insert, select
from sqlalchemy.orm import Session

from reconf.airflow_sqlite import (
    ASYNC_CONNECT_ARGS,
    BUSY_TIMEOUT_S,
    CONNECT_ARGS,
    SavepointsWriteFirst,
)
from schemas.config import PROJECT_ROOT

HOLD_S = 1.5


def _db(tmp_path: Path) -> Path:
    path = tmp_path / "airflow.db"
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode=WAL").fetchone() == ("wal",)
    conn.execute("CREATE TABLE t (x INTEGER)")
    conn.commit()
    conn.close()
    return path


@contextmanager
def _write_lock_held(path: Path) -> Iterator[None]:
    """Another connection (the scheduler, say) holds the write lock for HOLD_S, then commits."""
    taken, done = threading.Event(), threading.Event()

    def hold() -> None:
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO t VALUES (0)")
        taken.set()
        time.sleep(HOLD_S)
        other.execute("COMMIT")
        other.close()
        done.set()

    thread = threading.Thread(target=hold)
    thread.start()
    assert taken.wait(10)
    try:
        yield
    finally:
        thread.join()
        assert done.is_set()


def _savepoint_then_write(conn: sqlite3.Connection) -> None:
    """What Airflow's `backfill create` does per run: a savepoint, a read, then the write."""
    cur = conn.cursor()
    cur.execute("SAVEPOINT sa_savepoint_1")
    cur.execute("SELECT count(*) FROM t").fetchall()
    cur.execute("INSERT INTO t VALUES (1)")
    cur.execute("RELEASE SAVEPOINT sa_savepoint_1")
    conn.commit()


def test_without_it_a_savepoints_write_fails_at_once_whatever_the_busy_timeout(tmp_path: Path) -> None:
    """The cause: SQLite refuses to upgrade the savepoint's read transaction to a write while
    another connection writes, without calling the busy handler (the timeout)."""
    path = _db(tmp_path)
    plain = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S)
    with _write_lock_held(path):
        started = time.monotonic()
        with pytest.raises(sqlite3.OperationalError, match="database is locked"):
            _savepoint_then_write(plain)
        assert time.monotonic() - started < HOLD_S / 2  # at once: no waiting at all
    plain.close()


def test_with_it_the_savepoint_waits_for_the_write_lock_then_writes(tmp_path: Path) -> None:
    path = _db(tmp_path)
    conn = sqlite3.connect(path, **CONNECT_ARGS)
    assert isinstance(conn, SavepointsWriteFirst)
    with _write_lock_held(path):
        started = time.monotonic()
        _savepoint_then_write(conn)
        waited = time.monotonic() - started
    assert HOLD_S / 2 < waited < BUSY_TIMEOUT_S  # it waited for the other writer, then wrote
    assert sorted(x for (x,) in conn.execute("SELECT x FROM t")) == [0, 1]
    conn.close()


def test_a_savepoint_inside_an_open_transaction_is_left_alone(tmp_path: Path) -> None:
    """Only a savepoint that would open the transaction begins it: one inside a transaction (the
    implicit one before a write) nests in it, and the outer rollback undoes both."""
    path = _db(tmp_path)
    conn = sqlite3.connect(path, **CONNECT_ARGS)
    conn.execute("INSERT INTO t VALUES (5)")  # Python's implicit BEGIN
    assert conn.in_transaction
    conn.execute("SAVEPOINT inner_one")
    conn.execute("INSERT INTO t VALUES (6)")
    conn.execute("RELEASE SAVEPOINT inner_one")
    conn.rollback()
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
    conn.close()


def test_sqlalchemy_begin_nested_waits_and_keeps_postgresql_s_semantics(tmp_path: Path) -> None:
    """Through SQLAlchemy as Airflow builds its engine (its connect args plus
    check_same_thread=False): a `begin_nested()` read-then-write waits for the other writer; the
    savepoint nests in the session's transaction, so the session's commit (not the savepoint's
    release) makes it durable, as on PostgreSQL."""
    path = _db(tmp_path)
    engine = create_engine(f"sqlite:///{path}", connect_args={**CONNECT_ARGS, "check_same_thread": False})
    table = Table("t", MetaData(), Column("x", Integer))
    with _write_lock_held(path), Session(engine) as session:
        started = time.monotonic()
        with session.begin_nested():
            # it reads once the other writer has committed: its row, never a stale snapshot
            assert session.scalar(select(func.count()).select_from(table)) == 1
            session.execute(insert(table).values(x=1))
        session.commit()
        assert time.monotonic() - started > HOLD_S / 2
    with Session(engine) as session:
        with session.begin_nested():
            session.execute(insert(table).values(x=2))
        session.rollback()  # the outer transaction decides
        assert sorted(session.scalars(select(table.c.x))) == [0, 1]
    engine.dispose()


def test_the_async_arguments_do_the_same_through_aiosqlite(tmp_path: Path) -> None:
    import aiosqlite

    path = _db(tmp_path)

    async def write() -> float:
        async with aiosqlite.connect(path, **ASYNC_CONNECT_ARGS) as conn:
            started = time.monotonic()
            cur = await conn.cursor()
            await cur.execute("SAVEPOINT s")
            await cur.execute("SELECT count(*) FROM t")
            await cur.fetchall()
            await cur.execute("INSERT INTO t VALUES (1)")
            await cur.execute("RELEASE SAVEPOINT s")
            await conn.commit()
            return time.monotonic() - started

    assert ASYNC_CONNECT_ARGS is not CONNECT_ARGS  # Airflow edits the sync one in place
    with _write_lock_held(path):
        waited = asyncio.run(write())
    assert waited > HOLD_S / 2


@pytest.mark.e2e  # `airflow db migrate` first (15 s): not for `make test-fast`
def test_the_shells_airflow_after_the_env_line_connects_with_them(tmp_path: Path) -> None:
    """`eval "$(python -m reconf.services env)"`, then a process that loads Airflow as its CLI
    does: its sync and async engines open connections of this module's class, with its timeout."""
    probe = ("from airflow import settings\n"
             "settings.configure_orm()\n"
             "conn = settings.engine.raw_connection()\n"
             "print(type(conn.driver_connection).__name__)\n"
             "from airflow.settings import _get_connect_args\n"
             "print(_get_connect_args('sync')['timeout'], "
             "_get_connect_args('async')['factory'].__name__)\n")
    script = (f'eval "$(.venv/bin/python -m reconf.services env)"\n'
              f"python -c {shlex.quote(probe)}\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW", "PYTHONPATH"))}
    env.update({"RECONF_HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"})
    from reconf.settings import ensure_airflow
    from schemas.config import Paths

    saved = dict(os.environ)
    try:
        os.environ.update({"RECONF_HOME": str(tmp_path / "home")})
        ensure_airflow(Paths.from_env())  # `make up`'s `airflow db migrate`
    finally:
        os.environ.clear()
        os.environ.update(saved)
    done = subprocess.run(["bash", "-c", script], env=env, cwd=PROJECT_ROOT, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.split()
    assert lines[-3:] == ["SavepointsWriteFirst", str(BUSY_TIMEOUT_S), "SavepointsWriteFirst"], done.stdout

