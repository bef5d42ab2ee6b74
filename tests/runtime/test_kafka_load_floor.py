"""What explains the load benchmark's misses, from the run's own recorded series (no broker):
the floor (each arm's latency at the warm-up's low rate, periods without moves), the data's bound
on the maximum-rate ratio from the measured task loads, and the `differs (explained: …)`
verdicts they allow — only when the measurement does explain the miss."""

from __future__ import annotations

import itertools
import random

from bench.kafka_load.floor import best_peak, data_bound, floor_windows, peak
from bench.kafka_load.report import measured_lines, p99_target
from bench.kafka_load.series import ratio_target
from runtime.kafka_streams.latency import ProbeLine

# the 12 partitions' shares of the route stream measured by the runs of 2026-11-28 (%)
SHARES = [9.9, 3.9, 13.7, 8.7, 6.1, 10.3, 7.0, 8.8, 10.0, 7.3, 5.3, 9.1]
NODES = ["node-00", "node-01", "node-02"]


def _brute(loads: dict[str, float], caps: dict[str, float]) -> float:
    tasks = list(loads)
    return min(peak(loads, dict(zip(tasks, combo, strict=True)), caps)
               for combo in itertools.product(list(caps), repeat=len(tasks)))


def test_best_peak_is_exact() -> None:
    rng = random.Random(7)
    for caps in ({"a": 1.0, "b": 1.0, "c": 1.0}, {"a": 1.0, "b": 1.0, "c": 2.0}):
        for _ in range(4):
            loads = {f"t{i}": rng.uniform(1, 10) for i in range(7)}
            assert abs(best_peak(loads, caps) - _brute(loads, caps)) < 1e-9


def _warm_rows() -> list[dict[str, object]]:
    tasks = {f"0_{p}": s for p, s in enumerate(SHARES)}
    # Kafka's default assignor: 4 tasks each, round robin
    assignment = {t: NODES[p % 3] for p, t in enumerate(tasks)}
    rows: list[dict[str, object]] = []
    for arm, scale in (("default", 1.0), ("milp", 1.02)):  # one stream, measured twice
        for k in range(3):
            rows.append({"arm": arm, "phase": "warm", "period": k + 1, "moved": [],
                         "start_ms": 1000 * k, "end_ms": 1000 * (k + 1),
                         "assignment": assignment,
                         "task_load_pct": {t: v * scale for t, v in tasks.items()}})
    rows.append({"arm": "default", "phase": "ramp", "moved": [], "assignment": assignment,
                 "start_ms": 3000, "end_ms": 4000, "period": 4,
                 "task_load_pct": {t: 50.0 if t == "0_1" else 1.0 for t in tasks}})
    return rows


def test_the_data_bound_from_measured_task_loads() -> None:
    bound = data_bound(_warm_rows(), [1.0, 1.0, 1.0])
    assert bound is not None
    # round robin: node-02 gets partitions 2, 5, 8, 11: 13.7 + 10.3 + 10.0 + 9.1 = 43.1 %
    assert abs(bound["baseline_peak_pct"] - 43.1 / sum(SHARES) * 100) < 0.01
    assert 33.3 <= bound["best_peak_pct"] <= 34.0  # the ramp's row is not used
    assert 1.2 < bound["bound"] < 1.3
    # capacities 1, 1, 2: the best placement puts about half the load on the big instance
    hetero = data_bound(_warm_rows(), [1.0, 1.0, 2.0])
    assert hetero is not None and hetero["bound"] > bound["bound"]
    assert data_bound([], [1.0, 1.0, 1.0]) is None


def test_the_bound_prefers_the_offered_records_per_partition() -> None:
    rows = _warm_rows()  # the warm-up's periods in [0, 3000) ms, the ramp's [3000, 4000)

    def line(ts: int, ends: tuple[int, ...], arm: str = "default") -> ProbeLine:
        return ProbeLine(ts, arm, 0, 0, {}, sum(ends), 0, 0, None, ends)
    # every partition offered the same: round robin is then the best placement (bound 1.0),
    # whatever the warm-up's processing times said; samples outside the span do not count
    lines = [line(-500, (0,) * 12), line(100, (10,) * 12), line(2000, (50,) * 12),
             line(3900, (110,) * 12), line(9000, (999,) + (110,) * 11),
             line(200, (0,) * 12, arm="milp")]
    bound = data_bound(rows, [1.0, 1.0, 1.0], lines)
    assert bound is not None and bound["source"] == "offered records per task, warm-up and ramp"
    assert abs(bound["bound"] - 1.0) < 1e-9 and abs(bound["baseline_peak_pct"] - 100 / 3) < 1e-9
    assert data_bound(rows, [1.0, 1.0, 1.0], lines[:1])["source"].startswith("processing")  # type: ignore[index]


def test_a_ratio_miss_is_explained_only_by_a_bound_under_the_target() -> None:
    bound = {"bound": 1.29, "baseline_peak_pct": 43.1, "best_peak_pct": 33.4}
    t = ratio_target("x", 122.5, 100, 1.3, 1.07, bound=bound)
    assert t.verdict.startswith("differs (explained: no placement beats the default by more "
                                "than 1.29x") and t.verdict.endswith("docs/benchmarks.md "
                                                                     "§kafka-load)")
    assert "the data's bound 1.29x" in t.measured
    # further from the bound than one rate step: the planner's, a miss
    assert ratio_target("x", 112, 100, 1.3, 1.07, bound=bound).verdict == "miss"
    # the data allowed the target: a miss
    big = {**bound, "bound": 1.6}
    assert ratio_target("x", 122.5, 100, 1.3, 1.07, bound=big).verdict == "miss"
    assert ratio_target("x", 131, 100, 1.3, 1.07, bound=bound).verdict == "match"
    # beyond the bound by more than a rate step: impossible by placement, so not a beat
    assert ratio_target("x", 150, 100, 1.3, 1.07, bound=bound).verdict.startswith(
        "inconclusive (over the data's bound 1.29x")
    assert ratio_target("x", 150, 100, 1.3, 1.07, bound=big).verdict == "beat"


def test_a_p99_miss_is_explained_only_when_above_the_floor_it_meets() -> None:
    floor = {"default": {"p99": 60.0}, "milp": {"p99": 55.0}, "wire": {"p99": 9.0}}
    # 140 vs 217 ms: 0.65x; above the floors 85 vs 157 ms: 0.54x -> still a miss
    assert p99_target("x", 140, 217, floor, "milp", 131).verdict == "miss"
    t = p99_target("x", 100, 217, floor, "milp", 131)  # 0.46x: a match, whatever the floor
    assert t.verdict == "match" and "above it 45 vs 157 ms (0.29x)" in t.measured
    floor["milp"]["p99"] = 80.0
    t = p99_target("x", 140, 217, floor, "milp", 131)  # above: 60 vs 157 ms, 0.38x
    assert t.verdict.startswith("differs (explained: the floor every arm pays (p99 80/60 ms "
                                "at 131/s) is 28 % of the default's p99")
    assert "(wire 9)" in t.measured
    assert p99_target("x", 140, 217, {}, "milp", 131).verdict == "miss"  # nothing measured


def test_the_floor_leaves_out_periods_with_moves() -> None:
    rows = [{"arm": "milp", "phase": "warm", "start_ms": 0, "end_ms": 1000, "moved": []},
            {"arm": "milp", "phase": "warm", "start_ms": 1000, "end_ms": 2000, "moved": ["0_1"]},
            {"arm": "milp", "phase": "ramp", "start_ms": 2000, "end_ms": 3000, "moved": []}]

    def line(ts: int, arm: str, ms: int) -> ProbeLine:
        return ProbeLine(ts, arm, 100, 100, {ms: 100}, 100, 100, 0)
    lines = [line(500, "milp", 20), line(1500, "milp", 900), line(2500, "milp", 400),
             line(500, "wire", 3), line(1500, "wire", 4)]
    got = floor_windows(rows, lines, ["milp"])
    assert got["milp"]["p99"] == 20 and got["milp"]["periods"] == 1
    assert got["wire"]["p99"] == 4 and got["wire"]["periods"] == 2
    text = measured_lines([{"capacities": [1.0, 1.0, 1.0], "floor": got, "warm_rate": 131.0,
                            "bound": data_bound(_warm_rows(), [1.0, 1.0, 1.0])}])
    assert text[0] == ("floor (1,1,1), p50/p99 ms at 131/s, warm-up periods without moves: "
                       "milp 20/20, wire 3/4")
    assert text[1].startswith("data's bound (1,1,1, processing time per task, warm-up): "
                              "shares % [9.9 3.9 13.7")
