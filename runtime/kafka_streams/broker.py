"""A single-node KRaft Kafka broker from the Maven module's jars, on 127.0.0.1.

No Docker and no download: `kafka.tools.StorageTool format` and `kafka.Kafka` run on the
classpath Maven resolved for runtime/kafka_streams (kafka_2.13 4.4.0). One process is broker and
controller (`process.roles=broker,controller`), both listeners on free loopback ports, its data
under `<home>/data`, its log in `<home>/broker.log`, its pid file in `<run_dir>/<name>.pid`
(runtime/procs.py: stopping signals exactly the process we started).

    python -m runtime.kafka_streams.broker up|down|status [--home DIR]   (`make up` / `make down`)
"""

from __future__ import annotations

import argparse
import base64
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime.kafka_streams.build import java_argv
from runtime.procs import PidRecord, alive, free_port, read_record, spawn, stop
from schemas.errors import ReconfError

__all__ = ["Broker", "BrokerFailed", "running", "start", "stop_broker"]

_READY = "Kafka Server started"


class BrokerFailed(ReconfError, ValueError):
    """The broker did not come up; the message quotes the end of its log (a ValueError: the CLI
    prints it as one message, exit 2)."""


@dataclass(frozen=True)
class Broker:
    """A started broker: where clients connect and which process to stop."""

    bootstrap: str
    home: Path
    record: PidRecord


def _properties(home: Path, port: int, controller: int) -> str:
    return "\n".join([
        "process.roles=broker,controller",
        "node.id=1",
        f"controller.quorum.voters=1@127.0.0.1:{controller}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"log.dirs={home / 'data'}",
        "num.partitions=1",
        "auto.create.topics.enable=false",
        "offsets.topic.replication.factor=1",
        "offsets.topic.num.partitions=4",
        "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1",
        "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
        "group.initial.rebalance.delay.ms=0",
        "log.segment.bytes=16777216",
        "",
    ])


def _cluster_id() -> str:
    """Kafka's Uuid text form: URL-safe base64 of 16 random bytes, no padding; never one that
    starts with '-' (Kafka's `Uuid.randomUuid` skips those too: `kafka-storage format -t -x…`
    reads it as an option and refuses to format, one start in 64)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode("ascii").rstrip("=")
        if not text.startswith("-"):
            return text


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def running(run_dir: Path, name: str = "kafka") -> PidRecord | None:
    """The broker `run_dir` records, if it still runs."""
    path = run_dir / f"{name}.pid"
    record = read_record(path) if path.is_file() else None
    return record if record is not None and alive(record) else None


def start(home: Path, run_dir: Path, *, name: str = "kafka", timeout_s: float = 90.0,
          heap_mb: int = 512, full_jit: bool = False) -> Broker:
    """Format a fresh KRaft log directory under `home` and start the broker; wait until it
    serves. An existing `home/data` is formatted only once (a restart keeps the topics)."""
    home.mkdir(parents=True, exist_ok=True)
    port, controller = free_port(), free_port()
    while controller == port:
        controller = free_port()
    props = home / "server.properties"
    props.write_text(_properties(home, port, controller), encoding="utf-8")
    log = home / "broker.log"
    if not (home / "data" / "meta.properties").is_file():
        formatted = subprocess.run(
            java_argv("kafka.tools.StorageTool", "format", "-t", _cluster_id(), "-c", str(props),
                      heap_mb=256),
            capture_output=True, text=True, timeout=120)
        if formatted.returncode != 0:
            raise BrokerFailed(f"{props}: formatting the KRaft log directory failed: "
                               f"{formatted.stdout}{formatted.stderr}".strip())
    argv = java_argv("kafka.Kafka", str(props), heap_mb=heap_mb, full_jit=full_jit)
    env = {**os.environ, "LOG_DIR": str(home)}
    record = spawn(name, argv, env=env, cwd=home, run_dir=run_dir, log=log,
                   url=f"127.0.0.1:{port}")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not alive(record):
            raise BrokerFailed(f"the broker exited during start-up; {log} ends with:\n{_tail(log)}")
        if _port_open(port) and _READY in log.read_text(errors="replace"):
            return Broker(f"127.0.0.1:{port}", home, record)
        time.sleep(0.3)
    stop(record, grace_s=5)
    raise BrokerFailed(f"the broker did not serve within {timeout_s:.0f} s; {log} ends with:\n"
                       f"{_tail(log)}")


def stop_broker(record: PidRecord, run_dir: Path | None = None, grace_s: float = 20.0) -> str:
    """Stop exactly the recorded broker process (runtime/procs.py); drop its pid file."""
    how = stop(record, grace_s)
    if run_dir is not None:
        (run_dir / f"{record.name}.pid").unlink(missing_ok=True)
    return how


def _stop_instances(reconf_home: Path) -> None:
    """Every Kafka Streams instance a job started under `<RECONF_HOME>/runtime/*/kafka-streams`,
    and the load producer and latency probe of a job under load (`load/run`)."""
    for pid_file in sorted([*reconf_home.glob("runtime/*/kafka-streams/run/*.pid"),
                            *reconf_home.glob("runtime/*/kafka-streams/load/run/*.pid")]):
        record = read_record(pid_file)
        if record is not None and alive(record):
            print(f"kafka-streams {pid_file.parent.parent.parent.name}/{record.name}: "
                  f"{stop(record, 15.0)}")
        pid_file.unlink(missing_ok=True)


def main(argv: Sequence[str] | None = None) -> int:
    from schemas.config import Paths

    parser = argparse.ArgumentParser(prog="python -m runtime.kafka_streams.broker",
                                     description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("action", choices=("up", "down", "status"),
                        help="down also stops the jobs' Kafka Streams instances")
    parser.add_argument("--home", type=Path, default=None,
                        help="the broker's directory (default: $RECONF_HOME/kafka)")
    args = parser.parse_args(argv)
    reconf_home = Paths.from_env().home
    home = args.home or reconf_home / "kafka"
    run_dir = home / "run"
    record = running(run_dir)
    if args.action == "status":
        print(f"kafka: {'running at ' + str(record.url) if record else 'not running'}")
        return 0 if record else 3
    if args.action == "down":
        _stop_instances(reconf_home)
        print(f"kafka: {stop_broker(record, run_dir) if record else 'was not running'}")
        return 0
    if record is not None:
        print(f"kafka: already running at {record.url}")
        return 0
    try:
        broker = start(home, run_dir)
    except (BrokerFailed, ValueError) as exc:
        print(f"kafka: {exc}", file=sys.stderr)
        return 2
    print(f"kafka: running at {broker.bootstrap} (pid {broker.record.pid}, log {home}/broker.log)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
