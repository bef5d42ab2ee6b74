"""A job with `approval = true`, through the real scheduler: approve, reject, time out.

The Airflow of tests/e2e/test_scheduler.py, shared (tests/e2e/scheduler_kit.py SharedAirflow:
api-server, scheduler, dag-processor, triggerer; SQLite; free ports): each period is landed
before its run, and on Airflow 3.3 a human-in-the-loop task waits in *awaiting_input*, resumed by
the API server or the scheduler's timeout sweep, holding no trigger (the tests check that the
waiting task has none). One job, `gate` (SPL 1 day on a grid with no period end within hours of
the Airflow's start, scheduler_kit.quiet_start: no scheduled run between the tests' steps;
approval_timeout 45 s; one what-if shadow), whose runs
are triggered the way docs/operations.md says, and answered the way an operator answers without
the UI: the docs' commands (the REST endpoint the UI's "Required actions" form calls) in bash.

The tests run in file order and build on each other (one history: a rejected period that
publishes nothing, the next period approved and published as v1, then a period nobody answers,
rejected as timed out).
Every check reads what an operator would: the request as the API lists it, the runs' task
states, the published manifests, the plans table, the MLflow run's tags and `reconf audit`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest

from reconf.settings import make_source
from schemas.config import PROJECT_ROOT, resolve_job
from schemas.landing import format_period_end
from schemas.manifest import read_latest_version, read_manifest
from schemas.tables import PLANS
from schemas.tracking import Tag

from .docs_recipes import recipe, steps
from .scheduler_kit import DAY, SHARED, Airflow, Runtime, Share, SharedAirflow, _stamp, quiet_start

pytestmark = [pytest.mark.e2e]

JOB, DAG_ID = "gate", "reconfigure_gate"
TIMEOUT_S = 45
# Every setting of the shared jobs.toml's [defaults] (tests/e2e/test_scheduler.py) is set here:
# the job is the same alone or beside the scheduler module's.
CONFIG = """\
[jobs.gate]
spl = "1d"
start_date = {quiet}
catchup_periods = 0
landing_timeout = "10s"
strategy = "milp"
max_migrations = 3
solver_time_limit_s = 2
alpha = 1e-6
shadow_strategies = ["greedy"]
shadow_time_budget_s = 30
approval = true
approval_timeout = "{timeout}s"
source = {{ kind = "synthetic", operators = 2, keygroups_per_operator = 4, nodes = 3, seed = 7, varies = 30 }}
"""


def _docs_commands() -> dict[str, str]:
    """docs/operations.md, "Approval", its command-line block as printed (the recipe
    `approval-rest`), for job `gate`: the env and token lines, the plans waiting for an answer,
    approve, reject (each a bash snippet ending its last line: one may follow another)."""
    parts = steps(recipe("approval-rest").replace("reconfigure_demo", "reconfigure_gate"))
    assert [name for name, _ in parts] == [
        "", "the plans waiting for an answer: subject, body (summary, what-if, MLflow link), run id",
        "approve ...", "... or reject, with the reason"], parts
    return dict(zip(("token", "waiting", "approve", "reject"), (c for _, c in parts), strict=True))


DOCS = _docs_commands()
TOKEN, WAITING = DOCS["token"], DOCS["waiting"]
#: the docs' answer with the run id and the payload to fill in (`str.format`)
ANSWER = DOCS["approve"].replace("<run id>", "{run_id}").replace(
    """-d '{"chosen_options": ["Approve"]}'""", "-d '{payload}'")
REASON = "too many moves during the nightly batch"


def _period(airflow: Airflow, k: int) -> datetime:
    """Period k of `gate`, all ended before the tests began."""
    return quiet_start(airflow.started) + k * DAY


SHARED.register(Share(
    __name__, lambda start: CONFIG.format(quiet=_stamp(quiet_start(start)), timeout=TIMEOUT_S),
    # the scheduler's sweep of answers that timed out: every 5 s, not 15
    env={"AIRFLOW__SCHEDULER__TRIGGER_TIMEOUT_CHECK_INTERVAL": "5"}))


@pytest.fixture(scope="module")
def airflow(shared_airflow: SharedAirflow, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Airflow]:
    paths, env, start = shared_airflow.acquire(__name__, tmp_path_factory.mktemp("approval"))
    # no runtime thread: periods are landed by the tests
    handle = Airflow(paths, env, Runtime(paths, quiet_start(start)), start)
    handle.wait_for_dags([DAG_ID])
    handle.shell("airflow dags unpause reconfigure_gate")
    yield handle


def _asking(airflow: Airflow, k: int) -> str:
    """Land period k (the runtime first applies the newest version), trigger its run as the docs
    do, and wait until its approve task waits for an answer; its run id."""
    source = make_source(resolve_job(JOB), airflow.paths)
    source.apply_latest(airflow.paths.published)
    source.land_period(airflow.paths.landing, _period(airflow, k))
    airflow.shell(f"airflow dags trigger reconfigure_gate --logical-date {_period(airflow, k).isoformat()}")
    deadline = time.monotonic() + 420
    while True:
        run = airflow.run_of(DAG_ID, _period(airflow, k))
        if run is not None:
            states = airflow.task_states(DAG_ID, run[3])
            if states.get("approve") == "awaiting_input" and _parked(airflow, run[3]):
                # it holds no trigger (docs/operations.md, "Approval"): no triggerer needed
                assert airflow.query("SELECT trigger_id FROM task_instance WHERE dag_id = ? AND "
                                     "run_id = ? AND task_id = 'approve'", DAG_ID, run[3]) == [
                    (None,)], "the approve task waits in the triggerer"
                return run[3]
            assert run[2] not in ("success", "failed"), (run, states, airflow.log_tails(DAG_ID, run[3]))
        assert time.monotonic() < deadline, (run, airflow.log_tails(DAG_ID, run[3] if run else ""))
        time.sleep(1)


def _parked(airflow: Airflow, run_id: str) -> bool:
    """The scheduler has seen the asking process end (`Airflow.parked`: an answer given before
    that fails the task, docs/operations.md, "Approval")."""
    return airflow.parked(DAG_ID, "approve", run_id)


def _api(airflow: Airflow, commands: str) -> Any:
    """The JSON a docs command prints, after the docs' token lines."""
    out = airflow.shell(TOKEN + commands)
    return json.loads(out[out.index("{"):])


def _answer(airflow: Airflow, run_id: str, payload: dict[str, Any]) -> Any:
    return _api(airflow, ANSWER.format(run_id=run_id, payload=json.dumps(payload)))


def _plan_row(airflow: Airflow, k: int) -> dict[str, Any]:
    from jobs.lake import open_lake

    (row,) = open_lake(airflow.paths).period_rows(PLANS, JOB, _period(airflow, k))
    return dict(row)


def _tags(airflow: Airflow, run_id: str) -> dict[str, str]:
    from jobs.tracking.store import run_tags

    return run_tags(airflow.paths, run_id)


def _finished(airflow: Airflow, k: int) -> tuple[str, dict[str, str]]:
    run = airflow.wait_for_run(DAG_ID, _period(airflow, k), ("success", "failed"))
    states = airflow.task_states(DAG_ID, run[3])
    assert run[2] == "success", (states, airflow.log_tails(DAG_ID, run[3]))
    return run[3], states


def test_the_request_shows_the_plan_and_rejecting_it_publishes_nothing(airflow: Airflow) -> None:
    run_id = _asking(airflow, 1)
    (waiting,) = _api(airflow, WAITING)["hitl_details"]  # what the UI's Required actions lists
    assert waiting["task_instance"]["dag_run_id"] == run_id
    assert waiting["options"] == ["Approve", "Reject"] and waiting["defaults"] == ["Reject"]
    body, mlflow_run = waiting["body"], _plan_row(airflow, 1)["mlflow_run_id"]
    assert f"plan {JOB}@{format_period_end(_period(airflow, 1))}: milp" in body  # the plan's summary line
    assert "load distance" in body and "greedy" in body and "milp" in body  # the what-if ranking
    assert f"[{mlflow_run}](http://" in body and f"/runs/{mlflow_run}" in body  # its MLflow run
    assert f"within 0:00:{TIMEOUT_S}" in body
    assert airflow.task_states(DAG_ID, run_id).get("publish") in (None, "None")  # not yet
    answer = _api(airflow, DOCS["reject"].replace("<run id>", run_id))  # as the docs print it
    assert answer["chosen_options"] == ["Reject"] and answer["responded_by"]["name"] == "admin"
    _, states = _finished(airflow, 1)
    assert states["approve"] == "success" and states["publish"] == "skipped", states
    assert read_latest_version(airflow.paths.published, JOB) is None  # nothing published
    assert not list((airflow.paths.published / JOB).glob("v*.json"))
    row = _plan_row(airflow, 1)
    assert row["status"] == "rejected" and "approval: rejected by admin at " in row["message"]
    assert row["message"].endswith(f": {REASON}")
    tags = _tags(airflow, mlflow_run)
    assert (tags[Tag.APPROVAL], tags[Tag.APPROVAL_REASON], tags[Tag.APPROVAL_BY]) == (
        "rejected", REASON, "admin")
    assert tags[Tag.PUBLISH_STATUS] == "rejected"
    audit = airflow.shell(f".venv/bin/reconf audit --job gate --period-end "
                          f"{format_period_end(_period(airflow, 1))}")
    assert "  approval: rejected by admin at " in audit and f": {REASON}" in audit, audit
    assert "published: no, rejected at approval" in audit, audit
    assert "approval of plan" in airflow.log(DAG_ID, run_id, "approve")
    # a rejected plan is never published, not even by hand
    out = airflow.shell(f".venv/bin/reconf publish --job gate --period-end "
                        f"{format_period_end(_period(airflow, 1))} 2>&1 || true")
    assert "was rejected at approval" in out and "fix:" in out, out
    assert read_latest_version(airflow.paths.published, JOB) is None


def test_the_docs_rest_recipe_reaches_this_airflow_through_the_env_line_alone(
        airflow: Airflow) -> None:
    """The recipe as printed, in a shell that knows no port (the kit's: the operator's before
    the env line), against an Airflow on a free port that is not :8080: its own env line gives
    it this Airflow's port, the token is this Airflow's (the list answers), and without the env
    line it stops before it reads the password, rather than sending it to :8080."""
    from reconf.ports import recorded_url

    url = recorded_url(airflow.paths.home / "run", "api-server")
    assert url is not None and not url.endswith(":8080"), url
    assert not [k for k in airflow.env if k.startswith("RECONF_") and k.endswith("_PORT")]
    done = airflow.bash("set -e\n" + TOKEN + 'echo "$AIRFLOW"\n' + WAITING)
    assert done.returncode == 0, done.stderr[-3000:]
    first, rest = done.stdout.split("\n", 1)
    assert first == url  # this Airflow, from the env line
    assert "total_entries" in json.loads(rest)  # it accepted the token: its admin's password
    bare = TOKEN.split("\n", 1)[1]  # the recipe without its env line
    assert bare.startswith("AIRFLOW=")
    done = airflow.bash(bare + 'echo "sent to $AIRFLOW"\n')
    assert done.returncode != 0 and "sent to" not in done.stdout, done.stdout
    assert "RECONF_AIRFLOW_PORT: first the env line, docs/operations.md Services" in done.stderr


def test_approving_the_next_period_publishes_it(airflow: Airflow) -> None:
    """After a rejected period (its publish skipped), the next cycle runs, and its approved plan
    is the job's first version."""
    run_id = _asking(airflow, 2)
    answer = _answer(airflow, run_id, {"chosen_options": ["Approve"]})
    assert answer["chosen_options"] == ["Approve"]
    again = _api(airflow, ANSWER.format(run_id=run_id, payload='{"chosen_options": ["Reject"]}'))
    assert "already been updated" in again["detail"]  # one answer per request
    _, states = _finished(airflow, 2)
    assert states["approve"] == states["publish"] == "success", states
    assert read_latest_version(airflow.paths.published, JOB) == 1
    manifest = read_manifest(airflow.paths.published, JOB, 1)
    assert manifest.period_end == format_period_end(_period(airflow, 2))
    row = _plan_row(airflow, 2)
    assert row["status"] == "published" and manifest.plan_id == row["plan_id"]
    tags = _tags(airflow, row["mlflow_run_id"])
    assert tags[Tag.APPROVAL] == "approved" and tags[Tag.APPROVAL_BY] == "admin"
    assert tags[Tag.PUBLISH_STATUS] == "published" and tags[Tag.ASSIGNMENT_VERSION] == "1"


def test_no_answer_within_the_timeout_rejects_the_plan_as_timed_out(airflow: Airflow) -> None:
    _asking(airflow, 3)
    started = time.monotonic()
    _, states = _finished(airflow, 3)  # nobody answers
    assert time.monotonic() - started >= TIMEOUT_S - 5
    assert states["approve"] == "success" and states["publish"] == "skipped", states
    assert read_latest_version(airflow.paths.published, JOB) == 1  # nothing published
    row = _plan_row(airflow, 3)
    assert row["status"] == "timed_out", row
    tags = _tags(airflow, row["mlflow_run_id"])
    assert tags[Tag.APPROVAL] == "timed_out" and tags[Tag.APPROVAL_BY] == ""
    assert tags[Tag.APPROVAL_REASON] == f"no answer within 0:00:{TIMEOUT_S}, rejected by default"
    audit = airflow.shell(f".venv/bin/reconf audit --job gate --period-end "
                          f"{format_period_end(_period(airflow, 3))}")
    assert "  approval: timed out at " in audit, audit
    assert f": no answer within 0:00:{TIMEOUT_S}, rejected by default" in audit, audit
    assert "published: no, timed out at approval" in audit, audit
    # each period's cycle as `reconf period show` lists it (jobs/cycles.py)
    shown = airflow.shell(".venv/bin/reconf period show --job gate")
    for k, said in ((1, f"not_published  rejected: {REASON}"), (2, "published      v1 (published)"),
                    (3, f"not_published  timed_out: no answer within 0:00:{TIMEOUT_S}")):
        assert f"{format_period_end(_period(airflow, k))}  {said}" in shown, shown
    airflow.assert_quiet(DAG_ID)  # unpaused throughout, yet only the tests' runs


def test_the_docs_commands_are_the_ones_these_tests_run() -> None:
    """What the tests above run is the docs' block (job `gate` for `demo`), not a copy: the
    token lines, the list of waiting plans, an approve with `{payload}` in place of the docs'
    payload, the docs' reject with its reason; the documented default outcome is this one."""
    assert TOKEN.startswith('eval "$(.venv/bin/python -m reconf.services env)"\n'
                            "AIRFLOW=http://127.0.0.1:${RECONF_AIRFLOW_PORT:?")  # never :8080
    assert all(c.endswith("')\n") or c.endswith('"\n') or c.endswith("}'\n")
               for c in DOCS.values()), DOCS  # whole lines: one snippet may follow another
    assert "TOKEN=$(curl -s -X POST \"$AIRFLOW/auth/token\"" in TOKEN
    assert WAITING.startswith('curl -s "$AIRFLOW/api/v2/dags/reconfigure_gate/dagRuns/~/'
                              'hitlDetails?response_received=false"')
    assert "{run_id}" in ANSWER and "-d '{payload}'" in ANSWER and "Approve" not in ANSWER
    assert ANSWER.format(run_id="r", payload='{"chosen_options": ["Approve"]}') == \
        DOCS["approve"].replace("<run id>", "r")
    assert f'"params_input": {{"reason": "{REASON}"}}' in DOCS["reject"]
    text = (PROJECT_ROOT / "docs" / "operations.md").read_text()
    assert 'approval_timeout = "1h"    # default 1 h' in text  # the documented default ...
    assert '"no answer within 1:00:00, rejected by default"' in text  # ... and its outcome

    from schemas.config.job import JobConfig

    # the timeout test above reads "no answer within 0:00:45" (the operator writes the job's
    # timeout as a timedelta): the default's reason is the docs' one
    assert f"within {JobConfig('j').approval_timeout}," == "within 1:00:00,"
