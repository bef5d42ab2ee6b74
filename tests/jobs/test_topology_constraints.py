"""The job's topology constraints reach the planner: the plan stage's state carries the node
labels and the constraints of the config, and the what-if leaves out the shadows that could not
hold them (jobs/plan/assemble.py, jobs/whatif/shadow.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.plan.assemble import build_state
from jobs.whatif.codec import decode, encode
from jobs.whatif.shadow import choose_shadows, shadow_state
from placement.constraints import broken, raised
from placement.model import Budget
from placement.registry import get_strategy
from schemas.config import load_jobs

CONFIG = """
[jobs.zoned]
strategy = "milp"
max_migrations = 8
[jobs.zoned.constraints]
node_labels = { n0 = { zone = "a" }, n1 = { zone = "b" }, n2 = { zone = "b" } }
max_units_per_node = 3
exclude_nodes = ["n2"]
[[jobs.zoned.constraints.spread]]
operator = "op"
label = "zone"
min_domains = 2
"""


def test_the_plan_stages_state_carries_the_labels_and_the_plan_keeps_them(tmp_path: Path
                                                                          ) -> None:
    path = tmp_path / "jobs.toml"
    path.write_text(CONFIG)
    job = load_jobs(path)["zoned"]
    rows = [{"keygroup": f"k{i}", "operator": "op", "node": "n0", "load_pct": 10.0 + i,
             "state_bytes": 100.0} for i in range(4)]
    nodes = [{"node": n, "capacity": 1.0} for n in ("n0", "n1", "n2", "n3")]
    state = build_state(job, rows, nodes, [], {})
    assert dict(state.node("n1").labels) == {"zone": "b"} and state.node("n3").labels == ()
    assert state.constraints == job.constraints
    assert set(broken(state, state.assignment)) == {
        "spread of operator 'op': at least 2 zones", "at most 3 units per node"}
    plan = get_strategy("milp")(state, Budget(max_migrations=8), time_limit_s=2.0)
    assert broken(state, plan.assignment) == []
    assert "n2" not in {m.dst for m in plan.moves}
    chosen, left_out = choose_shadows(job, state, "milp")
    assert {"greedy", "flux"} <= set(chosen) and left_out == {}
    # a strategy that cannot hold them shadow-plans without them; one that can, with them
    assert shadow_state(state, "greedy") is state
    assert not shadow_state(state, "flux").constraints
    flux = get_strategy("flux")(shadow_state(state, "flux"), Budget(max_migrations=8))
    assert raised(state, flux.assignment) or broken(state, flux.assignment)


def test_the_what_ifs_input_keeps_the_labels_and_the_constraints(tmp_path: Path) -> None:
    path = tmp_path / "jobs.toml"
    path.write_text(CONFIG.replace('operator = "op"', 'units = ["k0", "k1"]')
                    + '[[jobs.zoned.constraints.pin]]\nunits = ["k2"]\nlabels = { zone = "a" }\n'
                    + '[[jobs.zoned.constraints.anti_affinity]]\nunits = ["k0", "k3"]\n')
    job = load_jobs(path)["zoned"]
    rows = [{"keygroup": f"k{i}", "operator": "op", "node": "n0", "load_pct": 1.0,
             "state_bytes": 1.0} for i in range(4)]
    state = build_state(job, rows, [{"node": "n1", "capacity": 1.0}], [], {})
    back = decode(encode(state))
    assert back.constraints == state.constraints and back.nodes == state.nodes
    assert broken(back, back.assignment) == broken(state, state.assignment) != []


def test_the_operations_guides_example_loads_and_a_flux_job_with_it_is_refused(tmp_path: Path
                                                                                ) -> None:
    from schemas.config import PROJECT_ROOT
    from schemas.errors import ConfigError
    text = (PROJECT_ROOT / "docs" / "operations.md").read_text()
    section = text[text.index("## Topology constraints"):]
    example = section[section.index("```toml\n") + 8:section.index("```\n", 10)]
    path = tmp_path / "jobs.toml"
    path.write_text('[jobs.orders]\nstrategy = "greedy"\n' + example)
    cons = load_jobs(path)["orders"].constraints
    assert cons is not None and cons.kinds == ("spread", "anti_affinity", "pin",
                                               "max_units_per_node", "exclude_nodes")
    path.write_text('[jobs.orders]\nstrategy = "flux"\n' + example)
    try:
        load_jobs(path)
    except ConfigError as exc:
        assert "jobs.orders.strategy: strategy 'flux' cannot hold the constraint(s)" in str(exc)
    else:
        raise AssertionError("a flux job with constraints loaded")


@pytest.mark.spark
def test_the_what_if_names_what_a_shadow_that_cannot_hold_the_constraints_would_break(
        collected_template, config_file, spark, tmp_path) -> None:
    import shutil
    from dataclasses import replace

    from pipeline_kit import JOB_ID, P1, stamp

    from jobs.plan.stage import plan_period
    from jobs.publish.stage import publish_period
    from jobs.whatif.stage import run_whatif
    from schemas.config import Paths, resolve_job
    from schemas.constraints import Constraints

    home = tmp_path / "home"
    shutil.copytree(collected_template, home)
    paths = Paths(home)
    labels = {"node-00": {"zone": "a"}, "node-01": {"zone": "b"}, "node-02": {"zone": "b"}}
    job = replace(resolve_job(JOB_ID, config_file), strategy="greedy",
                  shadow_strategies=("random", "milp"),
                  constraints=Constraints(node_labels=labels,
                                          exclude_nodes=frozenset({"node-01", "node-02"})))
    planned = plan_period(job, P1, paths=paths, spark=spark)
    publish_period(job, P1, paths=paths, spark=spark)
    result = run_whatif(job, stamp(P1), paths=paths)
    rows = {r["strategy"]: r for r in result.rows}
    assert rows["milp"]["status"] == "planned"
    assert "would break" not in (rows["milp"]["message"] or "")
    assert rows["random"]["status"] == "planned"
    assert rows["random"]["message"].startswith(
        "would break the topology constraint(s) no unit onto excluded node(s) "
        "['node-01', 'node-02']")
    assert not {m.dst for m in planned.plan.moves} & {"node-01", "node-02"}

