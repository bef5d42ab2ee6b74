"""The load model of a job declaring its input streams, without Spark (jobs/facets/load_model.py).

The NNLS fit recovers the synthetic runtime's true coefficients; GE refuses a bad load model or bad
stream rates with the offending rows named; the plan state gains the streams and the model, and a
`rod` plan made on it carries its resilience; bad input (a lower bound above the observed rate, a
stream not declared, no landed rates) is a clear error; before the model is fitted `rod` keeps
the placement and says why.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from jobs.errors import StageError
from jobs.facets.load_model import fit_rows, with_streams
from jobs.facets.subscriptions import check_facet_landing
from jobs.plan.scaling import solve
from jobs.validate.suites import validate_streams
from placement.model import Budget, ClusterState, KeyGroup, Node
from placement.registry import get_strategy
from placement.rod.params import RodParams
from runtime.source import write_period
from runtime.synthetic import (
    SyntheticSpec,
    build_tables,
    initial_assignment,
    period_loads,
    stream_rates,
    true_coefficients,
)
from schemas.config import ConfigError, JobConfig, Paths, load_jobs
from schemas.streams import LoadModelConfig

T0 = datetime(2026, 1, 1, tzinfo=UTC)
SPL = timedelta(minutes=5)
SPEC = SyntheticSpec("streams", operators=3, keygroups_per_operator=4, nodes=3, streams=3)
JOB = JobConfig("streams", strategy="rod",
                load_model=LoadModelConfig(SPEC.stream_names, {"in0": 400.0}, periods=5))


def _history(periods: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """What keygroup_stats and stream_stats hold after `periods` periods of the synthetic job."""
    assignment = initial_assignment(SPEC)
    loads, rates = [], []
    for n in range(1, periods + 1):
        end = T0 + n * SPL
        loads += [{"period_end": end, "keygroup": kg, "load_pct": v}
                  for kg, v in period_loads(SPEC, end, assignment).keygroups.items()]
        rates += [{"period_end": end, "stream": s, "tuples_per_s": r}
                  for s, r in stream_rates(SPEC, end).items()]
    return pd.DataFrame(loads), pd.DataFrame(rates)


def test_nnls_recovers_the_true_coefficients_once_the_rates_span_the_streams() -> None:
    loads, rates = _history(5)
    fitted = fit_rows(JOB, T0 + 5 * SPL, loads, rates)
    truth = true_coefficients(SPEC)
    assert len(fitted.rows) == len(truth) * 3 and "5 period" in fitted.note
    for row in fitted.rows:
        assert row["coefficient"] == pytest.approx(truth[row["keygroup"]][row["stream"]],
                                                   rel=1e-6, abs=1e-12)
        assert row["residual"] < 1e-9 and row["periods"] == 5
    # two periods cannot separate three streams: nothing is fitted, and the note says why
    early = fit_rows(JOB, T0 + 2 * SPL, *(f[f["period_end"] <= T0 + 2 * SPL] for f in (loads, rates)))
    assert early.rows == () and "rank 2 < 3" in early.note


def _model(rows: list[tuple[str, str, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"job_id": "streams", "period_end": T0, "keygroup": u, "stream": s,
                          "coefficient": c, "residual": 0.0, "periods": 5} for u, s, c in rows])


def test_ge_refuses_a_bad_load_model_and_bad_rates_naming_the_rows() -> None:
    rates = pd.DataFrame([{"job_id": "streams", "period_end": T0, "stream": s, "tuples_per_s": r}
                          for s, r in (("in0", 900.0), ("in1", -3.0), ("in9", 10.0))])
    model = _model([("a", "in0", 0.01), ("a", "in1", -0.5), ("b", "in0", math.inf),
                    ("b", "in7", 0.1)])
    report = validate_streams(rates, model, declared_streams=("in0", "in1", "in2"),
                              running_units={"a", "b", "c"})
    assert not report.success
    text = report.summary()
    assert "tuples_per_s=-3.0" in text and "stream=in9" in text  # negative, undeclared rate
    assert "missing (1): in2" in text  # a declared stream without a rate
    assert "keygroup=a" in text and "coefficient=-0.5" in text  # a negative coefficient, named
    assert "coefficient=inf" in text and "stream=in7" in text
    assert "missing (1): c" in text  # a running unit without coefficients
    good = validate_streams(rates.iloc[:1].assign(stream="in0"), _model([("a", "in0", 0.1)]),
                            declared_streams=("in0",), running_units={"a"})
    assert good.success, good.summary()


def _state() -> ClusterState:
    loads = period_loads(SPEC, T0 + SPL, initial_assignment(SPEC)).keygroups
    return ClusterState(
        keygroups=tuple(KeyGroup(kg, kg.split("-")[0], load=v) for kg, v in loads.items()),
        nodes=tuple(Node(n) for n in SPEC.node_names),
        assignment=initial_assignment(SPEC))


def test_the_plan_state_gains_the_facets_and_a_rod_plan_its_resilience() -> None:
    rates = [{"stream": s, "tuples_per_s": r} for s, r in stream_rates(SPEC, T0 + SPL).items()]
    model = [{"keygroup": u, "stream": s, "coefficient": c}
             for u, row in true_coefficients(SPEC).items() for s, c in row.items()]
    state = with_streams(_state(), JOB, "rod", rates, model)
    assert [s.id for s in state.streams] == ["in0", "in1", "in2"]
    assert state.streams[0].min_rate == 400.0 and "load_model" in state.facets
    plan = get_strategy("rod")(state, Budget(max_migrations=6), RodParams())
    assert plan.strategy == "rod" and len(plan.moves) <= 6
    assert 0 < plan.facet_metrics["feasible_set_ratio"] <= 1
    assert plan.facet_metrics["feasible_set_ratio"] >= plan.facet_before["feasible_set_ratio"] - 0.02
    # a lower bound above what was observed is a clear error, naming the config field
    high = JobConfig("streams", load_model=LoadModelConfig(("in0", "in1", "in2"),
                                                           {"in1": 2000.0}, 5))
    with pytest.raises(StageError, match=r"min_rate = 2000 is above its observed rate") as err:
        with_streams(_state(), high, "rod", rates, model)
    assert "load_model.min_rate.in1" in str(err.value)
    # before the model is fitted, rod keeps the placement and says why; greedy plans as usual
    early = with_streams(_state(), JOB, "rod", rates, [])
    assert "load_model" not in early.facets and len(early.streams) == 3
    kept = solve(early, Budget(max_migrations=6), "rod", {}, 2.0, None)
    assert kept.plan.moves == () and "load model is not fitted yet" in kept.plan.message
    assert solve(early, Budget(max_migrations=6), "greedy", {}, 2.0, None).plan.strategy == "greedy"


def test_config_refuses_undeclared_streams_and_too_few_periods(tmp_path: Path) -> None:
    for table, message in (('streams = ["a"]\nmin_rate = { b = 1.0 }', "min_rate.b: not a declared"),
                           ('streams = ["a", "b"]\nperiods = 1', "periods: must be an integer"),
                           ('streams = []', "streams: must be a non-empty list"),
                           ('streams = ["a"]\nmin_rate = { a = -1.0 }', "finite rate >= 0")):
        config = tmp_path / "jobs.toml"
        config.write_text(f"[jobs.j]\n[jobs.j.load_model]\n{table}\n")
        with pytest.raises(ConfigError, match=message) as err:
            load_jobs(config)
        assert "jobs.j.load_model" in str(err.value)


def test_a_job_declaring_streams_must_land_their_rates(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    end = T0 + SPL
    plain = SyntheticSpec("streams", operators=3, keygroups_per_operator=4, nodes=3)
    tables = build_tables(plain, end, initial_assignment(plain), plain.node_names)
    write_period(paths.landing, "streams", end, tables)
    with pytest.raises(StageError, match=r"declares input streams .* no streams dataset"):
        check_facet_landing(paths, JOB, end)


def test_a_period_with_a_huge_rate_is_left_out_of_the_fit_not_switching_it_off() -> None:
    """A rate of 1e300 (refused at validate for its own period) stays in the next periods' fit
    window: the fit leaves that period out, says so, and still recovers the coefficients."""
    loads, rates = _history(6)
    bad = T0 + 3 * SPL
    rates.loc[(rates["period_end"] == bad) & (rates["stream"] == "in1"), "tuples_per_s"] = 1e300
    fitted = fit_rows(JOB, T0 + 6 * SPL, loads, rates)
    truth = true_coefficients(SPEC)
    assert len(fitted.rows) == len(truth) * 3, fitted.note
    assert "fitted over 5 period(s)" in fitted.note and "left out period(s) 2026-01-01T00:15:00+00:00" in fitted.note
    for row in fitted.rows:
        assert row["coefficient"] == pytest.approx(truth[row["keygroup"]][row["stream"]],
                                                   rel=1e-6, abs=1e-12)
