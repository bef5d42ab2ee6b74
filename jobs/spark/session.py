"""The one Spark session builder every stage uses, with Delta Lake enabled.

The Delta jars come from Maven Central through Spark's own package resolution, once:
`python -m jobs.spark.session --fetch-jars` (run by `make setup`) resolves them into a project-local
Ivy cache and copies them to `<RECONF_HOME>/jars`. Sessions then load those local jars with
`spark.jars`, so no stage and no test ever waits on the network.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from jobs.spark.conf import _CATALOG, _EXTENSIONS, _LOG4J, local_jars, session_conf
from jobs.spark.connect import classic_session_running, connect_session, remote_url
from schemas.config import Paths

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = [
    "delta_package",
    "fetch_jars",
    "get_spark",
    "lazy_spark",
    "local_jars",
    "resolve_master",
    "session_conf",
    "submit_settings",
    "under_spark_submit",
]

_IVY_SETTINGS = Path(__file__).resolve().parents[2] / "infra" / "ivysettings.xml"
_VERSION_SUFFIX = re.compile(r"-\d[\w.\-]*\.jar$")


def delta_package() -> str:
    """The Maven coordinate of the Delta jar matching the installed pyspark and delta-spark."""
    from importlib.metadata import version

    import pyspark

    spark_minor = ".".join(pyspark.__version__.split(".")[:2])
    return f"io.delta:delta-spark_{spark_minor}_2.13:{version('delta-spark')}"


def _base_builder(app_name: str, master: str | None) -> SparkSession.Builder:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master is not None:  # None under spark-submit: its --master stands
        builder = builder.master(master)
    for key, value in session_conf().items():
        builder = builder.config(key, value)
    return builder


class _SessionOnUse:
    """`get_spark(paths)`, called when the stage first uses the session (`lazy_spark`); once,
    though a stage's concurrent queries (`jobs.lake.concurrently`) may all use it first."""

    def __init__(self, paths: Paths | None) -> None:
        self._paths = paths
        self._session: SparkSession | None = None
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        with self._lock:
            if self._session is None:
                self._session = get_spark(self._paths)
        return getattr(self._session, name)


def lazy_spark(paths: Paths | None = None) -> SparkSession:
    """The stage's session, made when first used: a stage whose reads and writes of the lake
    all go through delta-rs (jobs/lake/delta_rs.py) neither starts a JVM nor
    connects to a Spark Connect server."""
    return cast("SparkSession", _SessionOnUse(paths))


def get_spark(paths: Paths | None = None, *, app_name: str = "reconf", master: str | None = None) -> SparkSession:
    """A Delta-enabled session: a thin client of the Spark Connect server that
    `$RECONF_SPARK_REMOTE` names (no JVM in this process), else an in-process session on the
    locally fetched jars (`make setup` fetches them). An explicit `master`, spark-submit'd
    drivers and a process that already holds an in-process session get the in-process one:
    they are the cluster path (fleet planning, spark-submit)."""
    paths = paths or Paths.from_env()
    classic = master or under_spark_submit() or classic_session_running()
    remote = None if classic else remote_url()
    if remote is not None:
        return connect_session(remote, app_name)
    jars = local_jars(paths)
    if not jars:
        raise RuntimeError(
            f"the Delta Lake jars are not in {paths.jars}; run `make setup` "
            f"(or `python -m jobs.spark.session --fetch-jars`) once to fetch {delta_package()}"
        )
    master = resolve_master(master)
    # py4j logs its shutdown at INFO from an atexit hook, after test runners and Airflow have
    # closed their log streams ("--- Logging error ---"); its INFO lines help nobody.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    effective = master
    if effective is None:  # under spark-submit: the master its --master set
        from pyspark import SparkConf

        effective = SparkConf().get("spark.master", "local[*]")
    builder = _configure(_base_builder(app_name, master), effective)
    spark = builder.config("spark.jars", ",".join(map(str, jars))).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def under_spark_submit() -> bool:
    """True in a Python driver that spark-submit launched (it hands over its JVM gateway)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def resolve_master(master: str | None = None) -> str | None:
    """The master a new session uses: `master`, else spark-submit's `--master` (None: keep it),
    else `$RECONF_SPARK_MASTER`, else local[2]."""
    if master:
        return master
    if under_spark_submit():
        return None
    return os.environ.get("RECONF_SPARK_MASTER", "local[2]")


def _loopback(master: str) -> bool:
    return master.startswith(("spark://127.0.0.1:", "spark://localhost:"))


def _configure(builder: SparkSession.Builder, master: str) -> SparkSession.Builder:
    """What executors outside the driver's JVM need: the venv's Python (the project is installed
    editable there, so executors import `jobs`/`placement`), bounded memory, and on a loopback
    cluster a driver address the executors can reach."""
    # pyspark starts its Python workers with $PYSPARK_PYTHON (default: `python3` on the PATH,
    # which lacks the project's dependencies); the conf covers spark-submit'd drivers.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = builder.config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
    if master.startswith("spark://"):
        builder = builder.config(
            "spark.executor.memory", os.environ.get("RECONF_SPARK_EXECUTOR_MEMORY", "768m"))
        if _loopback(master):
            builder = builder.config("spark.driver.host", "127.0.0.1").config(
                "spark.driver.bindAddress", "127.0.0.1")
    return builder


def submit_settings(paths: Paths | None = None) -> dict[str, object]:
    """What `spark-submit jobs/submit.py …` needs besides --master, for the CLI and for Airflow's
    SparkSubmitOperator alike: the Delta jars on the driver's class path from the start (a
    session started inside an already-running JVM cannot add the SQL extension's classes),
    the Delta SQL settings, and the venv's Python for driver and executors."""
    paths = paths or Paths.from_env()
    jars = local_jars(paths)
    if not jars:
        raise RuntimeError(f"the Delta Lake jars are not in {paths.jars}; run `make setup` first")
    return {
        "jars": ",".join(map(str, jars)),
        "conf": {
            "spark.sql.extensions": _EXTENSIONS,
            "spark.sql.catalog.spark_catalog": _CATALOG,
            "spark.sql.session.timeZone": "UTC",
            "spark.pyspark.python": sys.executable,
            "spark.pyspark.driver.python": sys.executable,
            "spark.executor.memory": os.environ.get("RECONF_SPARK_EXECUTOR_MEMORY", "768m"),
            "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile={_LOG4J.as_uri()}",
        },
        "env_vars": {"PYSPARK_PYTHON": sys.executable, "SPARK_LOCAL_IP": "127.0.0.1"},
    }


def _artifact(jar_name: str) -> str:
    """'org.apache.parquet_parquet-column-1.16.0.jar' and 'parquet-column-1.17.0.jar' -> 'parquet-column'."""
    return _VERSION_SUFFIX.sub("", jar_name.split("_", 1)[-1] if "_" in jar_name else jar_name)


def _resolve_with_spark(ivy: Path, settings: Path | None = _IVY_SETTINGS) -> None:
    """Resolve the Delta package into `ivy` (Maven Central only, unless `settings` is None:
    then Spark's own chain, which also reads the local Maven repository)."""
    builder = (
        _base_builder("reconf-fetch-jars", "local[1]")
        .config("spark.jars.packages", delta_package())
        .config("spark.jars.ivy", str(ivy))
    )
    if settings is not None:
        builder = builder.config("spark.jars.ivySettings", str(settings))
    with _output_to(ivy / "resolve.log"):  # Ivy's progress lines: a log file, not the terminal
        spark = builder.getOrCreate()
        try:
            spark.range(1).count()
        finally:
            spark.stop()


@contextlib.contextmanager
def _output_to(log: Path) -> Iterator[None]:
    """Send this process's stdout and stderr (and so the JVM it starts, which inherits them) to
    `log` for the duration; the log's tail goes with any error."""
    log.parent.mkdir(parents=True, exist_ok=True)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with log.open("ab") as out:
        os.dup2(out.fileno(), 1)
        os.dup2(out.fileno(), 2)
        try:
            yield
        except Exception as exc:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
            raise RuntimeError(f"{exc}\n(last lines of {log}:)\n{tail}") from exc
        finally:
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def fetch_jars(paths: Paths) -> list[Path]:
    """Resolve the Delta package (and its dependencies) once and keep the jars locally.

    Spark's resolver (Ivy) is tried first; if it fails, `mvn dependency:get` fills the local
    Maven repository with the machine's Maven set-up, which Ivy consults before any remote.
    Jars whose artifact pyspark already bundles are dropped: pyspark's newer copy wins anyway,
    and two versions of e.g. jackson-databind on one class path invite trouble.
    """
    if local_jars(paths):
        return local_jars(paths)
    ivy = paths.home / "ivy"
    try:
        _resolve_with_spark(ivy)
    except Exception as first:
        mvn = shutil.which("mvn")
        if mvn is None:
            raise RuntimeError(f"Spark could not resolve {delta_package()} and mvn is not installed") from first
        subprocess.run([mvn, "-q", "dependency:get", f"-Dartifact={delta_package()}"], check=True)
        _resolve_with_spark(ivy, settings=None)  # now from the local Maven repository
    resolved = sorted((ivy / "jars").glob("*.jar"))
    if not any(j.name.startswith("io.delta_delta-spark") for j in resolved):
        raise RuntimeError(f"Spark resolved no Delta jar for {delta_package()} into {ivy}")
    import pyspark

    bundled = {_artifact(j.name) for j in (Path(pyspark.__file__).parent / "jars").glob("*.jar")}
    paths.jars.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=paths.jars.parent, prefix=".jars-"))
    for jar in resolved:
        if _artifact(jar.name) not in bundled:
            shutil.copy2(jar, staging / jar.name)
    staging.rename(paths.jars)
    return local_jars(paths)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fetch-jars", action="store_true", help="fetch the Delta jars once")
    args = parser.parse_args(argv)
    paths = Paths.from_env()
    paths.home.mkdir(parents=True, exist_ok=True)
    if args.fetch_jars:
        if not local_jars(paths):
            print(f"fetching {delta_package()} and its dependencies from Maven Central "
                  f"(log: {paths.home / 'ivy' / 'resolve.log'}) ...", flush=True)
        try:
            jars = fetch_jars(paths)
        except (RuntimeError, subprocess.CalledProcessError) as exc:
            print(f"error: could not fetch the Delta jars: {exc}", file=sys.stderr)
            return 1
        print(f"Delta jars ready in {paths.jars} ({len(jars)} jars)")
        return 0
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
