"""Stages as real processes at a fraction of their start-up: a preloaded fork server.

A stage run as `reconf <stage>` spends most of its 2-8 s importing (Great Expectations, MLflow,
delta-rs); a soak of hundreds of periods cannot pay that per step. The server imports what the
scheduler's task processes import (`PRELOAD`, as reconf/task_preload.py: imports only, no file, connection
or thread is open) and forks one child per command, as Airflow's forkserver does. Each child is
the leader of its own process group, runs `reconf.cli.main(argv)` (or `bench.soak.actions`)
with its stdout and stderr in files, and exits with its code: a fail point's SIGKILL of the group
(jobs/faults.py) or the server's timer kill is a real kill -9 of that process.

Protocol: one JSON line per batch on stdin, `{"cmds": [{argv, env, out, err, kill_after,
timeout}]}`; the commands of a batch run at once (a concurrent second plan), the answer is one
JSON line, `{"results": [{rc, seconds, hung}]}` (rc < 0: killed by that signal; hung: by the
timeout).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

__all__ = ["Command", "Forker", "Outcome"]

#: reconf/task_preload.py's libraries and stages, without Airflow's (no DAG runs here)
PRELOAD = ("great_expectations", "mlflow", "mlflow.tracking",
           "mlflow.store.tracking.sqlalchemy_store", "matplotlib.pyplot", "pandas",
           "pyarrow.dataset", "pyarrow.parquet", "deltalake", "pulp", "highspy", "jobs.run",
           "jobs.collect.stage", "jobs.validate.stage", "jobs.plan.stage", "jobs.publish.stage",
           "jobs.whatif.stage", "jobs.tracking.store", "jobs.publish.rollback", "jobs.heal.stage",
           "jobs.approval", "runtime.synthetic", "reconf.settings", "reconf.cli",
           "bench.soak.actions")
ACTIONS = "soak-action"  # argv[0] of a command run by bench/soak/actions.py, not the CLI


@dataclass(frozen=True)
class Command:
    """One process to run: its argv, extra environment (None removes a variable), and when to
    kill it (seconds after its start, None: never; `timeout`: a hung process is killed too)."""

    argv: tuple[str, ...]
    env: Mapping[str, str | None] = field(default_factory=dict)
    kill_after: float | None = None
    timeout: float = 300.0


@dataclass(frozen=True)
class Outcome:
    """What a command did: its exit code (negative: the signal that killed it), time, output."""

    argv: tuple[str, ...]
    rc: int
    seconds: float
    stdout: str
    stderr: str
    log: str  # the stderr file, for a replay or a report
    hung: bool = False  # killed because it ran past its timeout

    @property
    def killed(self) -> bool:
        return self.rc == -signal.SIGKILL


class Forker:
    """The client: starts the server with `env` as its environment and runs commands on it."""

    def __init__(self, env: Mapping[str, str], logs: Path) -> None:
        self.logs = logs
        logs.mkdir(parents=True, exist_ok=True)
        self._seq = 0
        with open(logs / "server.err", "w") as err:  # the server keeps its own copy
            self._proc = subprocess.Popen(
                [sys.executable, "-m", "bench.soak.forker"], env=dict(env), text=True,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                start_new_session=True)

    def run(self, *commands: Command) -> list[Outcome]:
        """Run `commands` at once; their outcomes in order."""
        files = []
        for c in commands:
            self._seq += 1
            stem = self.logs / f"{self._seq:06d}-{c.argv[0]}"
            files.append((Path(f"{stem}.out"), Path(f"{stem}.err")))
        request = {"cmds": [{"argv": list(c.argv), "env": dict(c.env), "out": str(o),
                             "err": str(e), "kill_after": c.kill_after, "timeout": c.timeout}
                            for c, (o, e) in zip(commands, files, strict=True)]}
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(json.dumps(request) + "\n")
        self._proc.stdin.flush()
        line = self._proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the soak's fork server died; see {self.logs / 'server.err'}")
        results = json.loads(line)["results"]
        return [Outcome(c.argv, int(r["rc"]), float(r["seconds"]),
                        o.read_text(errors="replace"), e.read_text(errors="replace"), str(e),
                        bool(r.get("hung")))
                for c, r, (o, e) in zip(commands, results, files, strict=True)]

    def close(self) -> None:
        if self._proc.poll() is None:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
            try:
                self._proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self._proc.pid, signal.SIGKILL)
                self._proc.wait()


def _child(cmd: dict[str, Any]) -> None:
    """In the forked child: its own group, its files, its environment, then the command."""
    os.setpgid(0, 0)
    for fd, name, flags in ((0, os.devnull, os.O_RDONLY), (1, cmd["out"], os.O_WRONLY),
                            (2, cmd["err"], os.O_WRONLY)):
        new = os.open(name, flags | (os.O_CREAT | os.O_TRUNC if fd else 0), 0o600)
        os.dup2(new, fd)
        os.close(new)
    for key, value in cmd["env"].items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value
    argv = cmd["argv"]
    rc = 1
    try:
        if argv[0] == ACTIONS:
            from bench.soak.actions import main as action_main

            rc = action_main(argv[1:])
        else:
            from reconf.cli import main as cli_main

            rc = cli_main(argv)
    except SystemExit as exc:  # argparse
        rc = exc.code if isinstance(exc.code, int) else 2
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(rc)


def _wait(pids: Sequence[int], cmds: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Wait for every child, killing one at its `kill_after` or `timeout`."""
    start = time.monotonic()
    pending = dict(enumerate(pids))
    results: dict[int, dict[str, Any]] = {}
    hung: set[int] = set()
    while pending:
        now = time.monotonic() - start
        for i, pid in list(pending.items()):
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                results[i] = {"rc": os.waitstatus_to_exitcode(status), "seconds": round(now, 3),
                              "hung": i in hung}
                del pending[i]
                continue
            after, timeout = cmds[i]["kill_after"], cmds[i]["timeout"]
            if now >= timeout:
                hung.add(i)  # a hang, not a fault: the checker reports it
            if now >= timeout or (after is not None and now >= after):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(pid, signal.SIGKILL)
        time.sleep(0.01)
    return [results[i] for i in range(len(pids))]


def serve(channel: IO[str]) -> None:
    for line in sys.stdin:
        cmds = json.loads(line)["cmds"]
        pids = []
        for cmd in cmds:
            pid = os.fork()
            if pid == 0:
                _child(cmd)
            pids.append(pid)
        channel.write(json.dumps({"results": _wait(pids, cmds)}) + "\n")
        channel.flush()


def _main() -> None:
    channel = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything the imports print goes to the server's log, not the channel
    import importlib
    import logging

    import matplotlib

    logging.getLogger("great_expectations._docs_decorators").setLevel(logging.WARNING)
    matplotlib.use("Agg")  # no display: the charts are files
    for name in PRELOAD:
        importlib.import_module(name)

    serve(channel)


if __name__ == "__main__":
    _main()
