# reconf: `make demo` and `make test` do all set-up on a fresh machine.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
JARS := .reconf/jars/.fetched
PERIODS ?= 4
JOB ?= flights2

.PHONY: setup demo test test-fast lint docs docs-serve mlflow-ui constraints clean help up down status system-packages

help:
	@echo "make demo       install, then run $(PERIODS) reconfiguration periods of job '$(JOB)' through Airflow"
	@echo "make test       install (also chromium, chromium-driver, postgresql via apt-get), then run the test suite"
	@echo "make test-fast  the inner loop: the tests that need no JVM, Airflow run, browser or soak"
	@echo "make lint       ruff and mypy"
	@echo "make docs       build the docs site strictly into site/ (make docs-serve: on http://127.0.0.1:8000)"
	@echo "make mlflow-ui  open the MLflow UI on the project's tracking store (port 5000, or MLFLOW_PORT / RECONF_MLFLOW_PORT)"
	@echo "make up         start Spark Connect (sc://127.0.0.1:15002), Airflow (http://127.0.0.1:8080), MLflow (:5000), a Kafka broker and the demo job's live runtime (LIVE_JOBS=...)"
	@echo "make down       stop what 'make up' started; make status: what runs"
	@echo "make clean      remove the stores under .reconf/ (keeps the virtualenv and the jars)"

# The virtualenv, with exactly the versions of constraints.txt.
$(STAMP): pyproject.toml constraints.txt
	@test -x "$(BIN)/python" || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e ".[dev]"
	$(BIN)/python -m pip check
	@touch $@

# The Delta jars, once, from Maven Central only (Spark's resolver, its output in a log file;
# Maven as the fallback).
$(JARS): $(STAMP)
	@$(BIN)/python -m jobs.spark.session --fetch-jars
	@touch $@

# The Kafka Streams module (runtime/kafka_streams: ReconfTaskAssignor, the flights application,
# the broker's jars): Maven resolves from Maven Central into ~/.m2 once, offline afterwards; its
# JUnit tests (the shared manifest vectors) run in the build.
KSTREAMS := runtime/kafka_streams/target/.built
KSTREAMS_SRC := $(shell find runtime/kafka_streams/src -type f 2>/dev/null) runtime/kafka_streams/pom.xml $(wildcard tests/kafka/vectors/*.json)
$(KSTREAMS): $(KSTREAMS_SRC)
	@command -v mvn >/dev/null || { echo "make setup: mvn not found; install Maven (apt-get install maven) and a JDK 17"; exit 2; }
	@log=$$(mktemp); cd runtime/kafka_streams && mvn -q -B package >$$log 2>&1 \
	  || { sed 's/\x1b\[[0-9;]*m//g' $$log; rm -f $$log; echo "make setup: the Maven build of runtime/kafka_streams failed (above)"; exit 2; }; rm -f $$log
	@touch $@

setup: $(STAMP) $(JARS) $(KSTREAMS)

demo: setup
	$(BIN)/reconf demo --job $(JOB) --periods $(PERIODS)

# The Debian packages the suite drives (Chromium + driver, PostgreSQL): installed when missing.
system-packages:
	@infra/system-packages.sh

# Two pytest-xdist workers: most of the slow tests wait on a scheduler, a broker or a JVM rather
# than compute, so a second worker fills that time. Tests are grouped per module (module fixtures
# and in-order tests stay on one worker; every Kafka test on one: tests/conftest.py), heaviest
# groups first. TEST_WORKERS=0 runs them in one process.
TEST_WORKERS ?= 2
# Python may cache bytecode under `make test` (a shell with PYTHONDONTWRITEBYTECODE set would
# make every pytest worker rewrite all test modules' asserts and every task process compile the
# project anew).
test: export PYTHONDONTWRITEBYTECODE :=
test: setup system-packages
	@$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope --no-loadscope-reorder; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests; that is a failure here"; exit 1; fi; \
	exit $$rc

# The inner loop: no Spark JVM, no Airflow DAG run, no browser, no Kafka JVM, no soak, no database server (markers in
# pyproject.toml); `make test` still runs everything.
test-fast: setup
	$(BIN)/python -m pytest -m "not spark and not e2e and not browser and not kafka and not soak" -q

lint: setup
	$(BIN)/ruff check .
	$(BIN)/mypy .

# The docs site (mkdocs.yml): strict, so a broken link or anchor fails the build; the CLI and
# configuration references are generated from the code at build time (tools/docs_reference.py).
docs: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir site

docs-serve: $(STAMP)
	$(BIN)/mkdocs serve --strict --dev-addr 127.0.0.1:8000

# Local services (reconf/services.py): a Spark Connect server with Delta (infra/spark-connect.sh),
# Airflow's api-server, scheduler, dag-processor and triggerer, and an MLflow server, then a
# single-node KRaft Kafka broker on free loopback ports (runtime/kafka_streams/broker.py; `down`
# also stops the jobs' Kafka Streams instances); pids in
# .reconf/run, logs in .reconf/logs/services. AIRFLOW_PORT / MLFLOW_PORT / SPARK_CONNECT_PORT
# (or RECONF_AIRFLOW_PORT / RECONF_MLFLOW_PORT / RECONF_SPARK_CONNECT_PORT) move them. It also
# runs the live runtime (`reconf runtime run`) of the jobs LIVE_JOBS (or RECONF_LIVE_JOBS) names,
# comma-separated, default demo; LIVE_JOBS= (empty) runs none.
up: setup
	$(BIN)/python -m reconf.services up $(if $(AIRFLOW_PORT),--airflow-port $(AIRFLOW_PORT)) $(if $(MLFLOW_PORT),--mlflow-port $(MLFLOW_PORT)) $(if $(SPARK_CONNECT_PORT),--spark-connect-port $(SPARK_CONNECT_PORT)) $(if $(filter-out undefined,$(origin LIVE_JOBS)),--runtime-jobs "$(LIVE_JOBS)")
	$(BIN)/python -m runtime.kafka_streams.broker up

down:
	@if [ -x "$(BIN)/python" ]; then $(BIN)/python -m reconf.services down; \
	$(BIN)/python -m runtime.kafka_streams.broker down; \
	else echo "nothing was running (no virtualenv yet)"; fi

# (`python -m reconf.services status` exits 3 when a service is missing; make status just reports.)
status:
	@$(BIN)/python -m reconf.services status $(if $(AIRFLOW_PORT),--airflow-port $(AIRFLOW_PORT)) $(if $(MLFLOW_PORT),--mlflow-port $(MLFLOW_PORT)) || true

# The project's tracking store: SQLite under $RECONF_HOME, or database `mlflow` on $RECONF_DB_URI.
mlflow-ui: setup
	$(BIN)/mlflow ui --backend-store-uri "$$($(BIN)/python -c 'from schemas.config import Paths; print(Paths.from_env().mlflow_uri)')" --host 127.0.0.1 --port $(or $(MLFLOW_PORT),$${RECONF_MLFLOW_PORT:-5000})

constraints: $(STAMP)
	( echo "# Every package of the tested environment, exact (pip freeze). Regenerate with: make constraints"; \
	  echo "# delta-spark is 4.4.0, not 4.4.1: Maven Central serves io.delta:delta-spark_4.2_2.13 up to 4.4.0 only."; \
	  $(BIN)/pip freeze --exclude-editable ) > constraints.txt

clean:
	rm -rf .reconf/lake .reconf/landing .reconf/published .reconf/mlflow .reconf/airflow \
	       .reconf/runtime .reconf/reports .reconf/logs
