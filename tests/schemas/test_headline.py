"""The headline leads with each strategy's own objective (before -> after, its bound), LD second."""

from __future__ import annotations

import pytest

from jobs.tracking.audit_trail import summary_line
from schemas.headline import fmt, headline, objective_for
from schemas.strategies import STRATEGIES

#: every objective's metrics as the pipeline logs them (`<name>_before`, `<name>_after`)
METRICS = {
    "load_distance_before": 12.81, "load_distance_after": 53.23, "lower_bound": 597196.447,
    "collocation_factor_before": 14.7, "collocation_factor_after": 26.5,
    "stream_traffic_before": 9.0, "stream_traffic_after": 5.0, "traffic_lower_bound_after": 4.0,
    "cost_total_before": 1.19e6, "cost_total_after": 6.0e5,
    "feasible_set_ratio_before": 0.31, "feasible_set_ratio_after": 0.42,
    "utilisation_imbalance_before": 20.0, "utilisation_imbalance_after": 3.5,
}


@pytest.mark.parametrize("strategy", sorted(STRATEGIES))
def test_every_strategy_leads_with_its_own_objective(strategy: str) -> None:
    objective = objective_for(strategy)
    line = headline(strategy, METRICS)
    before, after = METRICS[f"{objective.name}_before"], METRICS[f"{objective.name}_after"]
    assert line.startswith(f"{objective.label} "), line
    assert f"({objective.direction}" in line.split(";")[0]
    if objective.name != "load_distance":
        assert line.endswith("; load distance 12.810 -> 53.230"), line
    else:
        assert "; " not in line
    assert f"{fmt(before)} -> {fmt(after)} (" in line
    if objective.bound is None:
        assert "bound" not in line.split(";")[0]
    else:
        assert "bound" in line.split(";")[0]


def test_sprawl_reads_its_cost_and_its_bound_not_load_distance_first() -> None:
    assert headline("sprawl", METRICS) == (
        "SPRAWL cost 1.19e+06 -> 6e+05 (min, lower bound 5.972e+05); "
        "load distance 12.810 -> 53.230")
    assert headline("herding_exact", METRICS).startswith(
        "stream traffic 9.000 -> 5.000 (min, lower bound 4.000)")
    assert headline("rod", METRICS).startswith("feasible-set ratio 0.310 -> 0.420 (max)")
    # a run without a known strategy: load distance, and no bound claimed for it
    assert headline("unknown", METRICS) == "load distance 12.810 -> 53.230 (min)"
    assert headline("milp", METRICS) == ("load distance 12.810 -> 53.230 (min, lower bound "
                                         "5.972e+05)")


def test_the_mlflow_descriptions_first_line_leads_with_the_objective() -> None:
    tags = {"reconf.param.strategy": "cg", "reconf.publish_status": "published",
            "reconf.assignment_version": "3", "reconf.solver_status": "heuristic"}
    line = summary_line(tags, METRICS, 4)
    assert line.startswith("**utilisation imbalance 20.000 → 3.500 (min); load distance "
                           "12.810 → 53.230** · **4 migration(s)** · **published v3**"), line


def test_an_infinite_objective_read_back_from_mlflow_says_inf() -> None:
    """MLflow stores inf as the largest float: SPRAWL's cost of a placement it forbids (the
    initial allocation of wan-demo) reads "inf", not 1.798e+308."""
    import sys

    from schemas.headline import fmt, headline

    assert fmt(sys.float_info.max) == "inf" and fmt(-sys.float_info.max) == "-inf"
    line = headline("sprawl", {"cost_total_before": sys.float_info.max,
                               "cost_total_after": 4.386e5, "lower_bound": 4.386e5})
    assert line.startswith("SPRAWL cost inf -> 4.386e+05 (min, lower bound 4.386e+05)")


def test_rod_before_its_load_model_is_fitted_says_so() -> None:
    """A ROD job's first periods have no F/F* (the load model is not fitted): the line says
    why it reads n/a instead of leaving the operator to guess."""
    line = headline("rod", {"load_distance_before": 9.359, "load_distance_after": 9.359})
    assert line == ("feasible-set ratio n/a -> n/a (max; load model not fitted yet); "
                    "load distance 9.359 -> 9.359")
    assert "not fitted" not in headline("rod", METRICS)  # fitted: the ratio, nothing more

