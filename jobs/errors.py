"""The one error a stage raises for bad input (what is wrong, where, how to fix it), the checks
every stage makes before its first write, and the per-job lock that serialises writing stages."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Iterator

from schemas.config import Paths
from schemas.errors import ReconfError

__all__ = ["LOCK_WAIT_S", "StageError", "check_home", "is_concurrent_write", "job_lock",
           "lake_rows_refused"]

#: How long a stage waits for another run of a writing stage of the same job before giving up.
LOCK_WAIT_S = 600.0


class StageError(ReconfError):
    """A stage refused to run; nothing it would have written was written (what, where, fix: all
    three always given). Not a ValueError, so an `except ValueError` never swallows it."""

    where: str
    fix: str

    def __init__(self, what: str, *, where: str, fix: str) -> None:
        super().__init__(what, where=where, fix=fix)

    @classmethod
    def of(cls, error: ReconfError, *, where: str, fix: str) -> StageError:
        """`error` as a stage's refusal; `where` and `fix` stand in for the ones it lacks."""
        return cls(error.what, where=error.where or where, fix=error.fix or fix)


def check_home(paths: Paths) -> None:
    """RECONF_HOME must be a writable directory (or creatable as one) before any stage starts."""
    home = paths.home
    try:
        home.mkdir(parents=True, exist_ok=True)
        probe = home / f".write-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        reason = "it is a file, not a directory" if home.is_file() or exc.errno in (
            errno.ENOTDIR, errno.EEXIST) else exc.strerror or str(exc)
        raise StageError(
            f"the reconf home {home} is not usable: {reason}",
            where=f"RECONF_HOME={os.environ.get('RECONF_HOME', '(unset: the default)')}",
            fix="point RECONF_HOME at a writable directory (it is created if missing)",
        ) from None


@contextlib.contextmanager
def job_lock(paths: Paths, job_id: str, stage: str, *, wait_s: float = LOCK_WAIT_S) -> Iterator[None]:
    """Hold the job's writer lock: collect, plan and publish of one job run one at a time.

    An advisory `flock` on ``locks/<job>.lock`` under RECONF_HOME: the kernel releases it when the
    holder dies (even by kill -9), so a crash never leaves the job locked. A second run waits
    (saying so) and then proceeds, or gives up after `wait_s` with a clear message.
    """
    path = paths.home / "locks" / f"{job_id}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        deadline, told = time.monotonic() + wait_s, False
        while True:
            try:
                fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told:
                    # stdout: a wait is news, not an error (Airflow logs stderr as ERROR)
                    print(f"{stage} {job_id}: waiting for another collect, plan or publish of "
                          f"this job to finish ({_holder(path)}; lock {path})", flush=True)
                    told = True
                if time.monotonic() > deadline:
                    raise StageError(
                        f"another collect, plan or publish of job {job_id!r} has held its lock "
                        f"for over {wait_s:.0f} s",
                        where=str(path),
                        fix="wait for it to finish and run this stage again (a crashed run "
                            "releases the lock by itself)",
                    ) from None
                time.sleep(0.2)
        try:  # who holds it, for the message of a stage that waits
            handle.seek(0)
            handle.truncate()
            handle.write(f"{stage} pid {os.getpid()} since "
                         f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}\n")
            handle.flush()
        except OSError:
            pass  # the lock holds without the note
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def _holder(path: os.PathLike[str]) -> str:
    """The holder's note (stage, pid, since when), or a plain phrase without one."""
    try:
        with open(path, encoding="utf-8", errors="replace") as note:
            text = note.read(200).strip()
    except OSError:
        text = ""
    return f"held by {text}" if text else "held by another run"


def is_concurrent_write(exc: BaseException) -> bool:
    """Delta's optimistic-concurrency conflicts (another writer committed first), by name: they
    reach Python as py4j or pyspark exceptions whose class names the Delta exception, or as
    delta-rs's `CommitFailedError`."""
    text = f"{type(exc).__name__}: {exc}"[:2000]
    return any(name in text for name in (
        "ConcurrentAppendException", "ConcurrentDeleteReadException",
        "ConcurrentDeleteDeleteException", "ConcurrentTransactionException",
        "MetadataChangedException", "ProtocolChangedException", "DELTA_CONCURRENT",
        "CommitFailedError"))  # delta-rs's conflict



@contextlib.contextmanager
def lake_rows_refused(job_id: str, stamp: str, tables: str) -> Iterator[None]:
    """Turn the planner model's own checks (a ValueError from a Node, KeyGroup, Source, Stream or
    ClusterState built from the lake's rows) into a StageError: they meet a period that skipped
    validate (a dry run) or rows written after it, and must say where and how to fix like any
    other refusal."""
    try:
        yield
    except StageError:
        raise
    except ValueError as exc:
        raise StageError(
            f"the period's rows do not make a valid cluster state: {exc}",
            where=f"lake tables {tables} of job {job_id!r}, period ending {stamp}",
            fix=f"run `reconf validate --job {job_id} --period-end {stamp}`: its suites name the "
                "offending rows; fix them at the runtime and land and collect the period again "
                "(rows changed after validate are planned as they are now)",
        ) from None
