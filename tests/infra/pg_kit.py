"""A throw-away PostgreSQL server for the tests: Debian's binaries, a fresh cluster, loopback only.

PostgreSQL refuses to run as root, so as root the cluster belongs to the `postgres` user (Debian's
package creates it; `nobody` otherwise) and every server command runs through `runuser`. The data
directory lives in a fresh /tmp directory that user can reach (pytest's tmp dirs are 0700 root).
Authentication is `trust` on 127.0.0.1 only, for a cluster that lives as long as the test session.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

__all__ = ["PostgresServer", "pg_binary", "start_postgres"]

USER = "reconf"
DATABASES = ("airflow", "mlflow")


def pg_binary(name: str) -> str:
    """`initdb`/`pg_ctl` from PATH, else from Debian's /usr/lib/postgresql/<version>/bin."""
    found = shutil.which(name) or next(iter(sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"),
                                                   reverse=True)), None)
    if found is None:
        raise RuntimeError(f"PostgreSQL's {name} is not installed; install Debian's package: "
                           "apt-get install -y postgresql (.ci/run does it on CI)")
    return found


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class PostgresServer:
    root: Path  # data/, the log and the socket live here
    port: int
    as_user: tuple[str, ...]  # the `runuser -u <user> --` prefix, empty when not root

    @property
    def server_uri(self) -> str:
        """What RECONF_DB_URI takes: the server, no database."""
        return f"postgresql+psycopg2://{USER}@127.0.0.1:{self.port}"

    def dsn(self, database: str) -> str:
        return f"host=127.0.0.1 port={self.port} user={USER} dbname={database}"

    def _run(self, *argv: str) -> None:
        done = subprocess.run([*self.as_user, *argv], capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}{done.stderr}\n"
                               f"server log: {self.root / 'server.log'}")

    def stop(self) -> None:
        try:
            self._run(pg_binary("pg_ctl"), "-D", str(self.root / "data"), "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start_postgres() -> PostgresServer:
    """initdb a cluster, start it on a free loopback port, create the `airflow` and `mlflow` DBs."""
    import psycopg2

    root = Path(tempfile.mkdtemp(prefix="reconf-pg-", dir="/tmp"))
    as_user: tuple[str, ...] = ()
    if os.geteuid() == 0:
        owner = next((u for u in ("postgres", "nobody") if _exists(u)), None)
        if owner is None:
            raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists")
        entry = pwd.getpwnam(owner)
        os.chown(root, entry.pw_uid, entry.pw_gid)
        as_user = ("runuser", "-u", owner, "--")
    root.chmod(0o700)
    server = PostgresServer(root, _free_port(), as_user)
    server._run(pg_binary("initdb"), "-D", str(root / "data"), "-U", USER, "--auth=trust",
                "-E", "UTF8", "--locale=C", "--no-sync")
    options = (f"-p {server.port} -c listen_addresses=127.0.0.1 -k {root} "
               "-c fsync=off -c synchronous_commit=off -c full_page_writes=off")
    server._run(pg_binary("pg_ctl"), "-D", str(root / "data"), "-l", str(root / "server.log"),
                "-o", options, "-w", "-t", "120", "start")
    conn = psycopg2.connect(server.dsn("postgres"))
    try:
        conn.autocommit = True
        with conn.cursor() as cur:
            for name in DATABASES:
                cur.execute(f"CREATE DATABASE {name}")
    finally:
        conn.close()
    return server


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
    except KeyError:
        return False
    return True
