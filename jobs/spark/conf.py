"""The settings of every Delta-enabled Spark driver reconf starts: the in-process session's
(jobs/spark/session.py) and the Spark Connect server's (jobs/spark/connect.py), so both paths run
the same SQL the same way, on the locally fetched jars."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from schemas.config import Paths

__all__ = ["local_jars", "session_conf"]

_EXTENSIONS = "io.delta.sql.DeltaSparkSessionExtension"
_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"
_LOG4J = Path(__file__).with_name("log4j2.properties")


def local_jars(paths: Paths) -> list[Path]:
    return sorted(paths.jars.glob("*.jar"))


def session_conf() -> dict[str, str]:
    """The settings of every Delta-enabled driver we start: the in-process session's and the
    Spark Connect server's (jobs/spark/connect.py), so both paths run the same SQL the same way."""
    return {
        "spark.sql.extensions": _EXTENSIONS,
        "spark.sql.catalog.spark_catalog": _CATALOG,
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.databricks.delta.snapshotPartitions": "2",
        "spark.sql.sources.partitionOverwriteMode": "static",
        "spark.driver.memory": os.environ.get("RECONF_SPARK_DRIVER_MEMORY", "2g"),
        "spark.sql.warehouse.dir": str(Path(tempfile.gettempdir()) / "reconf-warehouse"),
        "spark.driver.extraJavaOptions": (
            f"-Dderby.system.home={Path(tempfile.gettempdir()) / 'reconf-derby'} "
            f"-Dlog4j2.configurationFile={_LOG4J.as_uri()}" + _extra_java_opts()
        ),
        **_event_log(),
    }


def _event_log() -> dict[str, str]:
    """`$RECONF_SPARK_EVENT_LOG` (an existing directory): Spark's event log written there, so
    `reconf bench cycle` counts the jobs, SQL queries and stages each stage runs
    (bench/cycle/jobcount.py); unset, no event log. One plain file per application (Spark 4
    rolls and compresses by default), appended to as the jobs run."""
    where = os.environ.get("RECONF_SPARK_EVENT_LOG", "").strip()
    return {"spark.eventLog.enabled": "true", "spark.eventLog.dir": where,
            "spark.eventLog.compress": "false",
            "spark.eventLog.rolling.enabled": "false"} if where else {}


def _extra_java_opts() -> str:
    """`$RECONF_SPARK_JAVA_OPTS`, appended to the driver's JVM options (for example
    `-XX:TieredStopAtLevel=1 -XX:+UseSerialGC`: a short stage on small data starts faster)."""
    extra = os.environ.get("RECONF_SPARK_JAVA_OPTS", "").strip()
    return f" {extra}" if extra else ""
