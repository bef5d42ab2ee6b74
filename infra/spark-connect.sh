#!/usr/bin/env bash
# The Spark Connect server with Delta, in the foreground: one long-lived Spark driver that the
# pipeline's stages use as thin clients (RECONF_SPARK_REMOTE=sc://127.0.0.1:15002), so no stage
# starts a JVM of its own. `make up` runs it in the background (reconf/services.py, service
# `spark-connect`: pid in .reconf/run, log in .reconf/logs/services) and `make down` stops it;
# the test set-up starts one on a free port (tests/conftest.py).
#
#   infra/spark-connect.sh [--port N] [--master URL]    serve on 127.0.0.1:N (15002)
#   infra/spark-connect.sh argv                          print the spark-submit command line
#
# Settings (environment): RECONF_SPARK_CONNECT_PORT (15002), RECONF_SPARK_MASTER (local[2]),
# RECONF_SPARK_DRIVER_MEMORY (2g), RECONF_JARS (the Delta jars, .reconf/jars).
# The command line itself is built by jobs/spark/connect.py (the same Delta settings as the stages'
# in-process session); docs/operations.md, "Spark Connect", has the production set-up.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${RECONF_PYTHON:-$ROOT/.venv/bin/python}"
[ -x "$PY" ] || { echo "spark-connect: no virtualenv at $ROOT/.venv; run \`make setup\` first" >&2; exit 1; }
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
if [ "${1:-}" = argv ]; then shift; exec "$PY" -m jobs.spark.connect argv "$@"; fi
exec "$PY" -m jobs.spark.connect serve "$@"
