"""Background processes owned by pid files: start, recognise, stop — exactly what we started.

A pid alone is not an identity (the kernel reuses pids), so every pid file also records the
process's start time in clock ticks since boot (`/proc/<pid>/stat`, field 22). A process counts
as ours only while pid *and* start time match; anything else is a stale file, removed on sight.
Each service runs in its own session and process group (`start_new_session`), so stopping it
signals the group plus any descendant that left it, and nothing else on the machine. Linux only
(reads /proc), like the rest of the local stack.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

__all__ = ["PidRecord", "alive", "free_port", "read_record", "spawn", "stop"]


@dataclass(frozen=True)
class PidRecord:
    """What `<run>/<name>.pid` holds: enough to find, recognise and describe the process."""

    name: str
    pid: int
    start_ticks: int
    url: str | None
    log: str
    argv: tuple[str, ...]
    started_at: float


def _stat(pid: int) -> tuple[str, int, int, int] | None:
    """(state, ppid, pgid, start ticks) of a live process, or None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = raw[raw.rfind(")") + 2:].split()  # the command name may hold spaces and ')'
    return fields[0], int(fields[1]), int(fields[2]), int(fields[19])


def alive(record: PidRecord) -> bool:
    """The recorded process still runs (not a zombie) and is the one we started."""
    stat = _stat(record.pid)
    return stat is not None and stat[0] != "Z" and stat[3] == record.start_ticks


def read_record(path: Path) -> PidRecord | None:
    """The record in `path`, or None (and the file removed) if it is unreadable."""
    try:
        data = json.loads(path.read_text())
        return PidRecord(**{**data, "argv": tuple(data["argv"])})
    except (OSError, ValueError, TypeError, KeyError):
        path.unlink(missing_ok=True)
        return None


def spawn(name: str, argv: Sequence[str], *, env: Mapping[str, str], cwd: Path, run_dir: Path,
          log: Path, url: str | None) -> PidRecord:
    """Start `argv` in a new session with output to `log`; write `<run_dir>/<name>.pid`."""
    run_dir.mkdir(parents=True, exist_ok=True)
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        out.write(f"\n==== {time.strftime('%Y-%m-%dT%H:%M:%S%z')} {' '.join(argv)}\n".encode())
        out.flush()
        proc = subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    stat = _stat(proc.pid)
    record = PidRecord(name=name, pid=proc.pid, start_ticks=stat[3] if stat else -1, url=url,
                       log=str(log), argv=tuple(argv), started_at=time.time())
    tmp = run_dir / f".{name}.pid.tmp"
    tmp.write_text(json.dumps(asdict(record)))
    tmp.replace(run_dir / f"{name}.pid")  # never a half-written pid file
    return record


def _members(record: PidRecord) -> set[int]:
    """Live processes of the service: its process group and every descendant of its leader,
    started no earlier than the leader (so a recycled pgid or pid is never ours)."""
    table: dict[int, tuple[str, int, int, int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None:
            table[int(entry.name)] = stat
    ours = {pid for pid, (state, _, pgid, start) in table.items()
            if pgid == record.pid and start >= record.start_ticks and state != "Z"}
    if alive(record):
        ours.add(record.pid)
        frontier = [record.pid]
        while frontier:
            parent = frontier.pop()
            for pid, (state, ppid, _, start) in table.items():
                if ppid == parent and pid not in ours and state != "Z" and start >= record.start_ticks:
                    ours.add(pid)
                    frontier.append(pid)
    return ours


def _signal(pids: Iterable[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _reap(pid: int) -> None:
    """Collect the exit status if the process is our own child (in-process callers, tests)."""
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _gone(pid: int) -> bool:
    """The process has exited: no such pid, or a zombie with no thread left. (A JVM's main thread
    ends first and leaves the leader a zombie while shutdown hooks run on its other threads,
    still holding its ports.)"""
    stat = _stat(pid)
    if stat is None:
        return True
    if stat[0] != "Z":
        return False
    try:
        return len(os.listdir(f"/proc/{pid}/task")) <= 1
    except OSError:
        return True


#: how long what a service leaves behind may outlive its leader once that has exited
ORPHAN_GRACE_S = 3.0


def stop(record: PidRecord, grace_s: float) -> str:
    """SIGTERM the service's processes, SIGKILL what is left after `grace_s`; how it ended.

    Once the leader has exited, what is left of its processes are orphans that nothing will
    stop: they get ORPHAN_GRACE_S, not the whole grace. (A scheduler whose LocalExecutor workers
    fork from a forkserver exits at once, while a worker that was running a task when the
    SIGTERM came waits for its next task for ever.)"""
    members = _members(record)
    if not members:
        return "was not running"
    _signal(members, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    left = members  # what SIGKILL gets when there is no grace at all
    while time.monotonic() < deadline:
        _reap(record.pid)
        if not (left := {p for p in members if not _gone(p)}):
            return "stopped"
        if record.pid not in left:  # the leader has exited: the rest are its orphans
            deadline = min(deadline, time.monotonic() + ORPHAN_GRACE_S)
        time.sleep(0.2)
    leader_gone = record.pid not in left
    _signal(left | _members(record), signal.SIGKILL)
    time.sleep(0.2)
    _reap(record.pid)
    if leader_gone:
        return f"stopped; killed {len(left)} process(es) it left behind"
    return f"killed after {grace_s:.0f} s"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now (the kernel's pick)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])
