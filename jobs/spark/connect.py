"""Spark Connect: one long-lived Spark driver with Delta, and the stages as thin clients of it.

Starting a JVM and a Spark session costs seconds per stage, more than a stage's work on one
period's statistics. With `RECONF_SPARK_REMOTE=sc://127.0.0.1:15002` set, `jobs.spark.session.get_spark`
returns a Spark Connect client instead (gRPC, no JVM in the stage's process) of the server that
`make up` starts (`infra/spark-connect.sh`, which runs `python -m jobs.spark.connect serve`).

The server is PySpark's own `SparkConnectServer` (the pyspark wheel bundles spark-connect), run
through spark-submit with the locally fetched Delta jars and the same session settings as the
in-process session (`jobs.spark.session.session_conf`): Delta's SQL extension and catalog, UTC, few
shuffle partitions. Delta's Python `DeltaTable` API needs py4j and does not work over Connect;
the lake uses SQL for what it did (jobs/lake/spark_sql.py), so one code path serves both.

A process is either a Connect client or holds an in-process session, never both: PySpark marks
Connect mode process-wide (`SPARK_CONNECT_MODE_ENABLED`).
"""

from __future__ import annotations

import argparse
import os
import socket
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlparse

from jobs.errors import StageError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from schemas.config import Paths

__all__ = [
    "DEFAULT_PORT",
    "REMOTE_ENV",
    "SERVER_CLASS",
    "classic_session_running",
    "connect_session",
    "endpoint",
    "remote_url",
    "server_argv",
    "wait_until_serving",
]

REMOTE_ENV = "RECONF_SPARK_REMOTE"
DEFAULT_PORT = 15002
SERVER_CLASS = "org.apache.spark.sql.connect.service.SparkConnectServer"
_FIX = (f"start the server (`make up`, or `infra/spark-connect.sh` in the foreground), "
        f"or unset {REMOTE_ENV} to run Spark inside the stage's process")


def remote_url() -> str | None:
    """`$RECONF_SPARK_REMOTE` (an `sc://host:port` URL), or None when unset or empty."""
    raw = os.environ.get(REMOTE_ENV, "").strip()
    if not raw:
        return None
    endpoint(raw)  # refuse a malformed URL here, with the variable's name
    return raw


def endpoint(url: str) -> tuple[str, int]:
    """(host, port) of an `sc://host[:port][/;params]` URL; StageError for anything else."""
    parsed = urlparse(url)
    try:
        port = parsed.port or DEFAULT_PORT
    except ValueError:
        port = -1
    if parsed.scheme != "sc" or not parsed.hostname or port <= 0:
        raise StageError(f"{REMOTE_ENV}={url!r} is not a Spark Connect URL",
                         where=REMOTE_ENV,
                         fix=f"set it to sc://HOST:PORT (e.g. sc://127.0.0.1:{DEFAULT_PORT}), "
                             "or unset it to run Spark inside the stage's process")
    return parsed.hostname, port


def _answers(host: str, port: int, timeout_s: float = 2.0) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


def connect_session(url: str, app_name: str = "reconf") -> SparkSession:
    """A Spark Connect client session of the server at `url`, checked to answer."""
    host, port = endpoint(url)
    if not _answers(host, port):
        raise StageError(f"no Spark Connect server answers at {url}", where=f"{host}:{port}",
                         fix=_FIX)
    if classic_session_running():
        raise StageError(
            "this process already runs an in-process Spark session, and PySpark cannot mix it "
            "with a Spark Connect client", where=f"{REMOTE_ENV}={url}",
            fix=f"run the stage in its own process, or unset {REMOTE_ENV} here")
    from pyspark.sql.connect.session import SparkSession as ConnectSession

    # The flag PySpark's own builder sets: pyspark.sql.functions then build Connect columns.
    os.environ["SPARK_CONNECT_MODE_ENABLED"] = "1"
    try:
        session = ConnectSession.builder.remote(url).getOrCreate()
        session.version  # noqa: B018  (one round trip: a server that accepts but cannot serve)
    except Exception as exc:  # grpc and PySpark raise several types for one refusal
        raise StageError(f"the Spark Connect server at {url} did not answer as one "
                         f"({type(exc).__name__}: {str(exc).splitlines()[0][:300]})",
                         where=f"{host}:{port}", fix=_FIX) from None
    return session  # type: ignore[return-value]  # the Connect session has the same API


def classic_session_running() -> bool:
    if "pyspark.core.context" not in sys.modules:
        return False
    from pyspark.core.context import SparkContext

    return SparkContext._active_spark_context is not None


def spark_home() -> Path:
    """The Spark distribution inside the pyspark wheel (bin/spark-submit, jars/)."""
    import pyspark

    return Path(pyspark.__file__).parent


def server_argv(paths: Paths, port: int, master: str | None = None) -> list[str]:
    """spark-submit running SparkConnectServer on 127.0.0.1:`port` with Delta: the Delta jars,
    the in-process session's settings, and executors on this interpreter."""
    from jobs.spark.conf import local_jars, session_conf

    jars = local_jars(paths)
    if not jars:
        raise StageError(f"the Delta Lake jars are not in {paths.jars}", where=str(paths.jars),
                         fix="run `make setup` (or `python -m jobs.spark.session --fetch-jars`) once")
    conf = {
        **session_conf(),
        "spark.connect.grpc.binding.address": "127.0.0.1",
        "spark.connect.grpc.binding.port": str(port),
        "spark.pyspark.python": sys.executable,
    }
    argv = [str(spark_home() / "bin" / "spark-submit"), "--class", SERVER_CLASS,
            "--name", "reconf-spark-connect",
            "--master", master or os.environ.get("RECONF_SPARK_MASTER", "local[2]"),
            "--jars", ",".join(map(str, jars))]
    for key, value in conf.items():
        argv += ["--conf", f"{key}={value}"]
    return argv


def server_env() -> dict[str, str]:
    """spark-submit's environment: the wheel's SPARK_HOME, this interpreter for Python workers,
    loopback only."""
    return {**os.environ, "SPARK_HOME": str(spark_home()), "PYSPARK_PYTHON": sys.executable,
            "SPARK_LOCAL_IP": "127.0.0.1"}


def wait_until_serving(url: str, timeout_s: float, alive: object = None) -> bool:
    """Poll until the server accepts connections on its port (True) or `timeout_s` passes;
    `alive`, a callable, ends the wait early when the server's process has gone."""
    host, port = endpoint(url)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if _answers(host, port, 1.0):
            return True
        if callable(alive) and not alive():
            return False
        time.sleep(0.3)
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jobs.spark.connect",
        description="Run the Spark Connect server with Delta in the foreground (exec spark-submit).")
    parser.add_argument("action", choices=("serve", "argv"),
                        help="serve: run the server; argv: print its spark-submit command line")
    parser.add_argument("--port", type=int,
                        default=int(os.environ.get("RECONF_SPARK_CONNECT_PORT", DEFAULT_PORT)))
    parser.add_argument("--master", default=None, help="Spark master (default local[2])")
    args = parser.parse_args(argv)
    from schemas.config import Paths

    try:
        command = server_argv(Paths.from_env(), args.port, args.master)
    except StageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.action == "argv":
        print(" ".join(command))
        return 0
    os.execve(command[0], command, server_env())  # the pid stays the server's (pid files)


if __name__ == "__main__":
    sys.exit(main())
