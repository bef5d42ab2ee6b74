"""The cycle's targets at real job sizes and how each stage grows with the job.

A target is a job size with a limit on the whole cycle (land -> applied), and for the largest
ones on the plan's certified gap (load distance against the solver's lower bound) and on the
cycle's peak memory (the largest resident set of the processes that ran its steps). Each is run
as a synthetic job whose key groups send to `TARGET_FANOUT` key groups of the next operator
(runtime/synthetic.py `fanout`): retained edges = units x fanout, as the communication facet
keeps per unit its heaviest pairs.

Growth: for each step (land, the four stages, apply) and each layer (lake read, GE, MLflow,
solver) the exponent b of t = a * n^b, least squares over log t against log n of the growth
jobs' key-group counts (10^3 -> 10^4 -> 10^5 where they ran). A stage linear in the job has
b ~ 1; the table prints b beside each step so a super-linear one is seen at once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["GROWTH_STEPS", "TARGETS", "TARGET_FANOUT", "Target", "exponent", "growth",
           "print_growth", "print_targets", "target_config", "verdicts"]

TARGET_FANOUT = 16
#: the steps and layers whose growth is fitted (the layers summed over the four stages)
GROWTH_STEPS = ("land", "collect", "validate", "plan", "publish", "total", "read", "ge",
                "mlflow", "solver", "peak_mib", "land_cpu", "collect_cpu", "validate_cpu",
                "plan_cpu", "publish_cpu")
_GIB = 1024.0


@dataclass(frozen=True)
class Target:
    """One size the cycle must reach: its job, the limit on the cycle's seconds and, where the
    issue sets them, on the plan's certified gap (%) and the cycle's peak memory (GiB)."""

    name: str
    operators: int
    keygroups_per_operator: int
    nodes: int
    cycle_s: float
    strategy: str = "milp"
    solver_time_limit_s: float = 5.0
    gap_pct: float | None = None
    memory_gib: float | None = None
    #: d > 0: a Herding job, every key group a query reading d sources (runtime/synthetic.py
    #: `reads`), planned by the strategy (herding_offline: IC); no edges
    reads: int = 0

    @property
    def units(self) -> int:
        return self.operators * self.keygroups_per_operator

    @property
    def label(self) -> str:
        what = "queries" if self.reads else "key groups"
        return f"{self.units:,} {what} x {self.nodes:,} nodes"


TARGETS: tuple[Target, ...] = (
    Target("t10k", 10, 1000, 100, 10.0),
    # 3 s, not 15: on this job the warm start's plan (LD 10.306 against the bound 10.303) is
    # what 15 s of neighbourhood search also ends with (docs/benchmarks.md, "plan at 32k")
    Target("t32k", 64, 512, 1000, 30.0, solver_time_limit_s=3.0, gap_pct=1.0, memory_gib=4.0),
    Target("t100k", 100, 1000, 1000, 90.0, solver_time_limit_s=30.0),
    Target("t100k-herding", 100, 1000, 1000, 90.0, strategy="herding_offline", reads=2),
)


def target_config(target: Target) -> list[str]:
    """The job table of a target (config/jobs.toml syntax)."""
    if target.reads:  # Herding's §6.1 setting: d sources per query, popularity exponent β = 2
        return [f"[jobs.{target.name}]", f'strategy = "{target.strategy}"',
                "max_migrations = 200",
                f'source = {{ kind = "synthetic", operators = {target.operators}, '
                f"keygroups_per_operator = {target.keygroups_per_operator}, "
                f"nodes = {target.nodes}, seed = 7, varies = 30, reads = {target.reads}, "
                "reads_beta = 2.0 }", ""]
    return [f"[jobs.{target.name}]", f'strategy = "{target.strategy}"', "max_migrations = 200",
            f"solver_time_limit_s = {target.solver_time_limit_s:g}",
            f'source = {{ kind = "synthetic", operators = {target.operators}, '
            f"keygroups_per_operator = {target.keygroups_per_operator}, nodes = {target.nodes}, "
            f"seed = 7, varies = 30, fanout = {TARGET_FANOUT} }}", ""]


def _verdict(value: float | None, limit: float) -> str:
    if value is None or not math.isfinite(value):
        return "miss"
    return "beat" if value < 0.9 * limit else "match" if value <= limit else "miss"


def verdicts(target: Target, row: Mapping[str, Any]) -> dict[str, str]:
    """match (within the limit), beat (under 90 % of it) or miss, per limit of the target."""
    out = {"cycle": _verdict(row.get("total"), target.cycle_s)}
    if target.gap_pct is not None:
        out["gap"] = _verdict(row.get("gap_pct"), target.gap_pct)
    if target.memory_gib is not None:
        peak = row.get("peak_mib")
        out["memory"] = _verdict(None if peak is None else peak / _GIB, target.memory_gib)
    return out


def exponent(points: Sequence[tuple[float, float]]) -> float | None:
    """b of t = a * n^b by least squares on logs; None with fewer than two usable points."""
    usable = [(math.log(n), math.log(t)) for n, t in points if n > 0 and t > 0]
    if len({x for x, _ in usable}) < 2:
        return None
    mx = sum(x for x, _ in usable) / len(usable)
    my = sum(y for _, y in usable) / len(usable)
    sxx = sum((x - mx) ** 2 for x, _ in usable)
    return sum((x - mx) * (y - my) for x, y in usable) / sxx


def _value(row: Mapping[str, Any], step: str) -> float | None:
    if step in row and isinstance(row[step], int | float):
        return float(row[step]) if math.isfinite(row[step]) else None
    layers = row.get("layers") or {}
    return float(layers[step]) if step in layers else None


def growth(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per mode: the growth jobs' sizes and each step's exponent over them."""
    out: dict[str, dict[str, Any]] = {}
    for mode in dict.fromkeys(r["mode"] for r in rows):
        sized = sorted((r for r in rows if r["mode"] == mode and r.get("units")
                        and str(r["job"]).startswith("kg")), key=lambda r: r["units"])
        if len(sized) < 2:
            continue
        fitted: dict[str, float | None] = {}
        for step in GROWTH_STEPS:
            pts = [(float(r["units"]), v) for r in sized if (v := _value(r, step)) is not None]
            fitted[step] = exponent(pts)
        out[mode] = {"sizes": [int(r["units"]) for r in sized], "exponents": fitted}
    return out


def print_growth(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The growth exponents per mode (the table's last block); returned for the JSON."""
    fitted = growth(rows)
    if not fitted:
        return fitted
    print("\ngrowth exponent b of t ~ n^b over the growth jobs' key groups (1: linear; layers "
          "summed over the four stages; peak_mib: the cycle's peak memory; *_cpu: the step's CPU "
          "seconds, what the shared machine's load does not inflate)\n"
          f"{'mode':>15} {'sizes':>22} " + " ".join(f"{s:>8}" for s in GROWTH_STEPS))
    for mode, fit in fitted.items():
        sizes = " -> ".join(f"{n:.0e}".replace("e+0", "e") for n in fit["sizes"])
        print(f"{mode:>15} {sizes:>22} " + " ".join(
            f"{b:8.2f}" if b is not None else f"{'-':>8}"
            for b in (fit["exponents"][s] for s in GROWTH_STEPS)))
    return fitted


def print_targets(rows: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The targets' rows, one per mode a target ran in: the cycle and its steps, the layers
    within them, the gap, the peak memory and the verdicts; a target not run is listed as
    such. Returned for the JSON."""
    by_job: dict[str, list[Mapping[str, Any]]] = {}  # a target's rows, one per mode run
    for r in rows:
        if r.get("jobs_at_once") == 1:
            by_job.setdefault(r["job"], []).append(r)
    print("\ntargets (seconds; whole cycle land -> applied; read/ge/mlflow/solver: within the "
          "stages; gap: LD vs the certified bound; peak: largest resident set of a step)\n"
          f"{'target':>36} {'mode':>15} {'land':>6} {'collect':>7} {'valid.':>6} {'plan':>6}"
          f" {'publish':>7} {'cycle':>6} {'read':>6} {'ge':>5} {'mlflow':>6} {'solver':>6}"
          f" {'gap%':>6} {'peak MiB':>8}  verdicts")
    out: list[dict[str, Any]] = []
    for target in TARGETS:
        limits = f"cycle <= {target.cycle_s:g} s" + (
            f", gap <= {target.gap_pct:g} %" if target.gap_pct is not None else "") + (
            f", peak <= {target.memory_gib:g} GiB" if target.memory_gib is not None else "")
        if target.name not in by_job:
            print(f"{target.label:>36}  not run ({limits})")
            out.append({"target": target.name, "label": target.label, "run": False})
            continue
        for row in by_job[target.name]:
            layers = row.get("layers") or {}
            judged = verdicts(target, row)
            gap = row.get("gap_pct")
            print(f"{target.label:>36} {row['mode']:>15} {row['land']:6.1f}"
                  f" {row['collect']:7.1f} {row['validate']:6.1f}"
                  f" {row['plan']:6.1f} {row['publish']:7.1f} {row['total']:6.1f}"
                  f" {layers.get('read', 0.0):6.1f} {layers.get('ge', 0.0):5.1f}"
                  f" {layers.get('mlflow', 0.0):6.1f} {layers.get('solver', 0.0):6.1f}"
                  f" {'-' if gap is None else f'{gap:6.2f}':>6} {row.get('peak_mib', 0.0):8.0f}  "
                  + ", ".join(f"{k} {v}" for k, v in judged.items()) + f"  ({limits})")
            out.append({"target": target.name, "label": target.label, "run": True,
                        "mode": row["mode"], "verdicts": judged, "total": row["total"],
                        "gap_pct": gap, "peak_mib": row.get("peak_mib")})
    return out
