"""The session builder passes `$RECONF_SPARK_JAVA_OPTS` on to the driver's JVM.

A real JVM in a subprocess (one per Python process): the options must reach the JVM's own
command line next to the builder's fixed ones (the log4j configuration), not just Spark's conf.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.config import PROJECT_ROOT

pytestmark = pytest.mark.spark

PROBE = """
from jobs.spark.session import get_spark
spark = get_spark()
jvm = spark.sparkContext._jvm
print("ARGS", *jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
spark.stop()
"""


def _jvm_args(tmp_path: Path, extra: str) -> list[str]:
    env = {**os.environ, "RECONF_HOME": str(tmp_path), "RECONF_SPARK_JAVA_OPTS": extra}
    done = subprocess.run([sys.executable, "-c", PROBE], env=env, cwd=PROJECT_ROOT,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(x for x in done.stdout.splitlines() if x.startswith("ARGS"))
    return line.split()[1:]


def test_extra_java_options_reach_the_driver_jvm(tmp_path: Path) -> None:
    args = _jvm_args(tmp_path, "  -XX:+UseSerialGC -Dreconf.probe=on ")
    assert "-XX:+UseSerialGC" in args and "-Dreconf.probe=on" in args
    assert any(a.startswith("-Dlog4j2.configurationFile=") for a in args)  # the fixed ones stay
