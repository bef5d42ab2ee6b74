"""The load benchmark's computations on recorded series, no broker: exact latency percentiles
from the probe's per-second histograms, lag and backlog per window, utilisation from snapshots,
whether a rate was held, the maximum sustainable rate, recovery after a shift, and the targets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench.kafka_load.report import targets
from bench.kafka_load.series import (
    Criteria,
    confirmed_failure,
    held,
    max_sustainable,
    periods_to_stable,
    ratio_target,
)
from runtime.kafka_streams.latency import (
    ProbeLine,
    lag_slope,
    merge,
    percentile,
    read_probe,
    utilisation,
    window,
)


def _line(ts: int, out_total: int, end: int, lat: dict[int, int], arm: str = "a") -> ProbeLine:
    return ProbeLine(ts, arm, sum(lat.values()), out_total, lat, end, end - 5, 5)


def test_percentiles_are_exact_over_merged_seconds() -> None:
    # 98 fast records in one second, 2 slow ones in the next: the p99 is a slow one, which an
    # average of per-second p99s (10 and 900) would not give
    hist = merge([{10: 98}, {900: 1, 1000: 1}])
    assert percentile(hist, 50) == 10
    assert percentile(hist, 98) == 10
    assert percentile(hist, 99) == 900
    assert percentile(hist, 100) == 1000
    assert percentile({}, 99) is None
    with pytest.raises(ValueError, match="percentile q"):
        percentile(hist, 0)


def test_window_backlog_slope_and_rates() -> None:
    # 10 s at 100 records/s in, results 80/s: the backlog grows 20 records/s
    lines = [_line(1000 * s, 80 * s, 100 * s, {50 + s: 80}) for s in range(1, 11)]
    w = window(lines, "a", 1000, 11000)
    assert w.results == 800 and w.out_per_s == pytest.approx(80.0)
    assert w.backlog_slope == pytest.approx(20.0)
    assert w.backlog_last == 200 and w.backlog_max == 200
    assert w.p50 == 55 and w.p99 == 60
    assert window(lines, "b", 1000, 11000).results == 0
    with pytest.raises(ValueError, match="after its start"):
        window(lines, "a", 5000, 5000)
    assert lag_slope([(0.0, 1.0)]) == 0.0


def test_read_probe_skips_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "probe.jsonl"
    full = {"ts_ms": 1, "arm": "a", "out": 2, "out_total": 2, "lat": {"7": 2}, "end": 3,
            "committed": 1, "lag": 2}
    path.write_text(json.dumps(full) + "\n" + '{"ts_ms": 2, "arm": "a", "ou')
    lines = read_probe(path)
    assert len(lines) == 1 and lines[0].lat == {7: 2} and lines[0].backlog == 1


def test_utilisation_is_busy_over_wall_time() -> None:
    before = {"n0": {"pid": 1, "ts_ms": 0, "tasks": {"0_0": {"proc_ns": 0}}},
              "n1": {"pid": 2, "ts_ms": 0, "tasks": {}}}
    after = {"n0": {"pid": 1, "ts_ms": 2000, "tasks": {"0_0": {"proc_ns": 1_500_000_000},
                                                       "0_1": {"proc_ns": 100_000_000}}},
             "n1": {"pid": 3, "ts_ms": 2000, "tasks": {}}}  # restarted: left out
    assert utilisation(before, after) == {"n0": pytest.approx(0.8)}


def test_saturation_of_a_recorded_instance_is_judged_where_expected() -> None:
    # an instance of capacity 500 records/s fed 450/s keeps up, fed 550/s its backlog grows
    # 50/s (10 % of the rate, over the 3 % allowed)
    crit = Criteria(slope_frac=0.03, p99_ms=500)
    for rate, ok in ((450.0, True), (550.0, False)):
        served = min(rate, 500.0)
        lines = [_line(1000 * s, int(served * s), int(rate * s), {20: int(served)})
                 for s in range(1, 11)]
        verdict, why = held(window(lines, "a", 1000, 11000).as_dict(), rate, crit)
        assert verdict is ok, why
    slow = window([_line(1000, 10, 10, {900: 10})], "a", 0, 2000).as_dict()
    assert held(slow, 10.0, crit) == (False, "p99 900 ms > 500 ms")
    with pytest.raises(ValueError, match="slope_frac"):
        Criteria(slope_frac=0)


def test_max_sustainable_rate_and_recovery() -> None:
    assert max_sustainable([(100, True), (110, True), (121, False), (133, False)]) == (110, False)
    # one step lost and the next held: noise, not the arm's limit
    assert max_sustainable([(100, True), (110, False), (121, True), (133, False),
                            (146, False)]) == (121, False)
    assert max_sustainable([(100, False)]) == (None, False)  # the ramp ended on a failure
    assert max_sustainable([(100, True), (110, True)]) == (110, True)  # censored
    assert confirmed_failure([(100, True), (110, False), (121, False)])
    assert not confirmed_failure([(100, False), (110, True), (121, False)])
    assert periods_to_stable([True, True]) == 0
    assert periods_to_stable([False, False, True, True]) == 2
    assert periods_to_stable([False, True, False]) is None


def test_targets_match_beat_miss() -> None:
    assert ratio_target("x", 140, 100, 1.3, 1.05).verdict == "beat"
    assert ratio_target("x", 132, 100, 1.3, 1.05).verdict == "match"
    assert ratio_target("x", 120, 100, 1.3, 1.05).verdict == "miss"
    assert ratio_target("x", None, 100, 1.3, 1.05).verdict == "n/a"
    assert ratio_target("x", 140, 100, 1.3, 1.05, censored=True).measured.startswith(">= 1.40x")

    def row(arm: str, moved: int, planned: int) -> dict[str, object]:
        return {"arm": arm, "phase": "fixed", "moved": ["t"] * moved, "planned_moves": planned,
                "published": 1 if planned else None}
    result = {"capacities": [1.0, 1.0, 2.0], "max_rate": {"default": 100.0, "milp": 155.0},
              "censored": {"milp": False},
              "fixed": {"default": {"before_shift": {"p99": 400.0}},
                        "milp": {"before_shift": {"p99": 150.0}}},
              "stable_after_shift": {"milp": 3},
              "rows": [row("milp", 2, 2), row("milp", 4, 0)]}
    found = {t.name.split(":")[1].split("(")[0].strip(): t.verdict
             for t in targets([result], budget=3, step_pct=5)}
    assert found == {"max rate vs default, capacities 1,1,2": "match",
                     "p99 at 90 % of default's max": "match",
                     "lag stable after the hot-spot shift": "miss",
                     "migrations within the budget every period": "miss"}


def test_a_loaded_periods_line_and_mlflow_metrics() -> None:
    from runtime.kafka_streams.loaded import loaded_metrics, period_line

    record = {"open_loop": {"rate": 400.0, "hot_spot": 0, "seconds": 15.0},
              "latency_ms": {"p50": 40.0, "p95": 120.0, "p99": 310.0, "max": None},
              "lag": {"max": 900.0, "mean": 120.5, "samples": 15},
              "backlog": {"max": 80.0, "mean": 20.0, "slope_per_s": 0.1},
              "out_per_s": 399.0, "utilisation": {"node-01": 0.7, "node-00": 0.55}}
    assert period_line(record) == (
        "  under load: 400 records/s in, 399/s out; latency p50 40 ms, p99 310 ms; "
        "lag mean 120, max 900; utilisation [0.55 0.70]")
    metrics = loaded_metrics(record)
    assert metrics["kstreams_p99_ms"] == 310.0 and "kstreams_max_ms" not in metrics
    assert metrics["kstreams_utilisation_max"] == 0.7 and metrics["kstreams_rate"] == 400.0
    assert period_line({"produced": 10}) == "" and loaded_metrics({"produced": 10}) == {}


def test_task_times_are_in_reference_nanoseconds() -> None:
    # the same task, the same records: half the time measured on an instance of capacity 2, the
    # same load for the planner (% of a reference node) as on one of capacity 1
    from runtime.kafka_streams.stats import period_figures

    def snap(capacity: float, ns: int) -> dict[str, object]:
        return {"pid": 1, "ts_ms": 1000, "capacity": capacity, "process_cpu_ns": 0,
                "tasks": {"0_0": {"in": 100, "out": 100, "proc_ns": ns, "state_bytes": 0}}}
    slow = period_figures({}, {"n0": snap(1.0, 800_000_000)}, {"0_0": "n0"})
    fast = period_figures({}, {"n1": snap(2.0, 400_000_000)}, {"0_0": "n1"})
    assert slow.tasks["0_0"][2] == fast.tasks["0_0"][2] == 800_000_000
    assert fast.node_proc_ns() == {"n1": 800_000_000}
