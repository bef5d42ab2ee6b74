#!/usr/bin/env bash
# A Spark standalone cluster on loopback: one master and N workers (default 2, 1 core each),
# started from the PySpark distribution in the project's virtualenv (its pip package has
# bin/spark-class but no sbin/start-*.sh, so the daemons are launched through spark-class).
#
#   infra/spark-cluster.sh up       start (or complete) the cluster; prints the master URL
#   infra/spark-cluster.sh down     stop exactly the processes `up` started (by pid)
#   infra/spark-cluster.sh status   what runs; exit 0 when the master and all workers are up
#
# Settings (environment):
#   RECONF_HOME                 state root (default: <project>/.reconf): pids in run/spark,
#                               logs in logs/spark, worker scratch in run/spark/work-<i>
#   RECONF_SPARK_PORT           master port (7077)
#   RECONF_SPARK_UI_PORT        master web UI port (8091; 8080 is Airflow's); workers' UIs
#                               take free ports
#   RECONF_SPARK_WORKERS        number of workers (2)
#   RECONF_SPARK_WORKER_CORES   cores per worker (1)
#   RECONF_SPARK_WORKER_MEMORY  memory per worker for executors (1g)
#   RECONF_SPARK_WAIT_S         how long `up` waits for the workers to register (180)
#
# Then point the stages at it: RECONF_SPARK_MASTER=spark://127.0.0.1:7077 (docs/operations.md).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="$ROOT/.venv/bin/python"
HOME_DIR="${RECONF_HOME:-$ROOT/.reconf}"
RUN="$HOME_DIR/run/spark"
LOGS="$HOME_DIR/logs/spark"
HOST=127.0.0.1
PORT="${RECONF_SPARK_PORT:-7077}"
UI_PORT="${RECONF_SPARK_UI_PORT:-8091}"
WORKERS="${RECONF_SPARK_WORKERS:-2}"
CORES="${RECONF_SPARK_WORKER_CORES:-1}"
MEMORY="${RECONF_SPARK_WORKER_MEMORY:-1g}"
WAIT_S="${RECONF_SPARK_WAIT_S:-180}"
URL="spark://$HOST:$PORT"
MASTER_CLASS=org.apache.spark.deploy.master.Master
WORKER_CLASS=org.apache.spark.deploy.worker.Worker

die() { echo "spark-cluster: $*" >&2; exit 1; }

[ -x "$PY" ] || die "no virtualenv at $ROOT/.venv; run \`make setup\` first"
SPARK_HOME="$("$PY" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))')"
[ -x "$SPARK_HOME/bin/spark-class" ] || die "no bin/spark-class in $SPARK_HOME (pyspark install broken?)"
export SPARK_HOME SPARK_LOCAL_IP="$HOST" SPARK_NO_DAEMONIZE=1
# Executors run the project's Python code with the venv's interpreter (the project is installed
# editable there); the driver also sets spark.pyspark.python (jobs/spark/session.py).
export PYSPARK_PYTHON="$PY"

# The pid in $1 if that process is alive and is the Spark daemon named by $2 (a pid file left
# by a crash may name a recycled pid: never signal a process that is not ours).
live_pid() {
  local file="$1" class="$2" pid
  [ -f "$file" ] || return 1
  pid="$(cat "$file")"
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$class" || return 1
  echo "$pid"
}

master_json() {  # the master UI's JSON status, or nothing when it does not answer
  "$PY" - "$UI_PORT" <<'EOF' 2>/dev/null || true
import json, sys, urllib.request
try:
    with urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/json/", timeout=3) as r:
        print(json.dumps(json.load(r)))
except Exception:
    pass
EOF
}

alive_workers() {  # how many workers the master lists as ALIVE (0 when it does not answer)
  local json
  json="$(master_json)"
  [ -n "$json" ] || { echo 0; return; }
  "$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); print(sum(w.get("state")=="ALIVE" for w in d.get("workers",[])))' "$json"
}

port_busy() {
  "$PY" -c 'import socket,sys; s=socket.socket(); s.settimeout(1); sys.exit(0 if s.connect_ex(("127.0.0.1", int(sys.argv[1])))==0 else 1)' "$1"
}

start_daemon() {  # name class args...: background the JVM, record its pid
  local name="$1" class="$2"; shift 2
  # spark-class ends in `exec java`, so $! is the JVM's pid; setsid detaches it from our
  # terminal and process group, so it outlives this script.
  setsid "$SPARK_HOME/bin/spark-class" "$class" "$@" >"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
}

cmd_up() {
  mkdir -p "$RUN" "$LOGS"
  if ! live_pid "$RUN/master.pid" "$MASTER_CLASS" >/dev/null; then
    port_busy "$PORT" && die "port $PORT is taken by another process (not a master started here); set RECONF_SPARK_PORT"
    port_busy "$UI_PORT" && die "port $UI_PORT is taken by another process; set RECONF_SPARK_UI_PORT"
    start_daemon master "$MASTER_CLASS" --host "$HOST" --port "$PORT" --webui-port "$UI_PORT"
    echo "spark-cluster: started master (pid $(cat "$RUN/master.pid"), log $LOGS/master.log)"
  else
    echo "spark-cluster: master already running (pid $(cat "$RUN/master.pid"))"
  fi
  local i deadline=$((SECONDS + WAIT_S))
  until [ -n "$(master_json)" ]; do
    live_pid "$RUN/master.pid" "$MASTER_CLASS" >/dev/null || die "the master exited; see $LOGS/master.log"
    [ $SECONDS -lt $deadline ] || die "the master UI did not answer on port $UI_PORT within ${WAIT_S}s; see $LOGS/master.log"
    sleep 1
  done
  for i in $(seq 1 "$WORKERS"); do
    if live_pid "$RUN/worker-$i.pid" "$WORKER_CLASS" >/dev/null; then
      echo "spark-cluster: worker $i already running (pid $(cat "$RUN/worker-$i.pid"))"
      continue
    fi
    mkdir -p "$RUN/work-$i"
    start_daemon "worker-$i" "$WORKER_CLASS" --host "$HOST" --cores "$CORES" --memory "$MEMORY" \
      --webui-port 0 --work-dir "$RUN/work-$i" "$URL"
    echo "spark-cluster: started worker $i (pid $(cat "$RUN/worker-$i.pid"), $CORES core, $MEMORY, log $LOGS/worker-$i.log)"
  done
  until [ "$(alive_workers)" -ge "$WORKERS" ]; do
    for i in $(seq 1 "$WORKERS"); do
      live_pid "$RUN/worker-$i.pid" "$WORKER_CLASS" >/dev/null || die "worker $i exited; see $LOGS/worker-$i.log"
    done
    [ $SECONDS -lt $deadline ] || die "only $(alive_workers)/$WORKERS workers registered within ${WAIT_S}s; see $LOGS/"
    sleep 1
  done
  echo "spark-cluster: up, $WORKERS workers registered; master UI http://$HOST:$UI_PORT"
  echo "$URL"
}

stop_pid() {  # name class: TERM, wait up to 20 s, then KILL; remove the pid file
  local name="$1" class="$2" pid n
  if pid="$(live_pid "$RUN/$name.pid" "$class")"; then
    kill -TERM "$pid" 2>/dev/null || true
    for n in $(seq 1 40); do
      [ -e "/proc/$pid" ] || break
      sleep 0.5
    done
    [ -e "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null || true
    echo "spark-cluster: stopped $name (pid $pid)"
  fi
  rm -f "$RUN/$name.pid"
}

cmd_down() {
  local f name
  [ -d "$RUN" ] || { echo "spark-cluster: not running (nothing in $RUN)"; return 0; }
  shopt -s nullglob
  for f in "$RUN"/worker-*.pid; do  # workers first: a master going away makes them retry
    name="$(basename "$f" .pid)"
    stop_pid "$name" "$WORKER_CLASS"
  done
  stop_pid master "$MASTER_CLASS"
  echo "spark-cluster: down"
}

cmd_status() {
  local ok=0 i pid
  if pid="$(live_pid "$RUN/master.pid" "$MASTER_CLASS")"; then
    echo "master   $URL  pid $pid  UI http://$HOST:$UI_PORT"
  else
    echo "master   not running"; ok=3
  fi
  for i in $(seq 1 "$WORKERS"); do
    if pid="$(live_pid "$RUN/worker-$i.pid" "$WORKER_CLASS")"; then
      echo "worker-$i pid $pid"
    else
      echo "worker-$i not running"; ok=3
    fi
  done
  [ $ok -eq 0 ] && echo "registered workers: $(alive_workers)/$WORKERS"
  return $ok
}

case "${1:-}" in
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  *) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
