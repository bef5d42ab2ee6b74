"""Tables and the target summary of `reconf bench balance` (rows as written by bench/balance/).

Targets (paper §5.1, Figures 2-4): at a 2 s limit the MILP's load distance is ≤ Flux's in every cell, and on
average (the mean over cells of LD_MILP / LD_Flux) at most 0.7 × Flux's. The summary also gives
the ratio of the mean load distances, the cells where the certified lower bound proves Flux
already optimal (no planner can beat it there), and HiGHS against CBC at every limit.
Every grid also checks that the MILP is ≤ min(Flux, greedy) in every cell (it warm-starts from
both; ties within `REL_TOL`, the room its secondary objective terms w2·(d_u + d_l) leave), and
gives the ratio and the gap to the lower bound per scenario (`--heterogeneous`).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from typing import Any

Row = dict[str, Any]
TOL = 1e-9
REL_TOL = 1e-6
TARGET_RATIO = 0.7


def label(row: Row) -> str:
    if row["strategy"] == "milp":
        return f"milp-{row['solver']}@{row['time_limit_s']:g}s"
    return str(row["strategy"])


def _by_cell(rows: list[Row]) -> dict[str, dict[str, Row]]:
    out: dict[str, dict[str, Row]] = defaultdict(dict)
    for r in rows:
        out[r["cell"]][label(r)] = r
    return out


def scenario(row: Row) -> str:
    return str(row.get("scenario") or "uniform")


def cell_line(rows: list[Row]) -> str:
    """One cell in one line: LD before, then every strategy's LD (and the best lower bound)."""
    first = rows[0]
    bounds = [r["lower_bound"] for r in rows if r["lower_bound"] is not None]
    parts = [f"{label(r)} {r['load_distance']:.3f}" for r in rows]
    where = "" if scenario(first) == "uniform" else f"{scenario(first)} "
    return (f"{where}{first['cluster']} mm={first['max_migrations']} varies={first['varies']} "
            f"seed={first['seed']}: LD0 {first['load_distance_before']:.2f} | "
            + ", ".join(parts) + (f" | bound {max(bounds):.3f}" if bounds else ""))


def format_table(rows: list[Row]) -> str:
    """One line per cell; columns: every strategy's LD, the best bound, the MILP's wall times."""
    cells = _by_cell(rows)
    labels = sorted({label(r) for r in rows}, key=lambda s: (not s.startswith("milp"), s))
    wide = any(scenario(r) != "uniform" for r in rows)
    head = (f"{'scen.':<7}" if wide else "") + f"{'cluster':<8}{'mm':>4}{'var':>5}{'seed':>5}" \
        f"{'LD0':>8}" + "".join(f"{name:>17}" for name in labels) + f"{'bound':>8}"
    lines = [head, "-" * len(head)]
    for plans in cells.values():
        r0 = next(iter(plans.values()))
        bounds = [p["lower_bound"] for p in plans.values() if p["lower_bound"] is not None]
        cols = "".join(
            f"{plans[name]['load_distance']:>9.3f} {plans[name]['wall_s']:>5.2f}s"
            if name in plans else f"{'':>17}" for name in labels)
        lines.append((f"{scenario(r0):<7}" if wide else "")
                     + f"{r0['cluster']:<8}{r0['max_migrations']:>4}{r0['varies']:>5}"
                     f"{r0['seed']:>5}{r0['load_distance_before']:>8.2f}{cols}"
                     f"{max(bounds) if bounds else float('nan'):>8.3f}")
    return "\n".join(lines)


def _ratios(cells: dict[str, dict[str, Row]], name: str) -> list[tuple[float, float, Row]]:
    """(LD_MILP, LD_Flux, milp row) for every cell that has both."""
    out = []
    for plans in cells.values():
        if name in plans and "flux" in plans:
            out.append((plans[name]["load_distance"], plans["flux"]["load_distance"],
                        plans[name]))
    return out


def _ratio(milp: float, flux: float) -> float:
    return 1.0 if flux <= TOL else milp / flux


def target_lines(rows: list[Row], solver: str = "highs", limit: float = 2.0) -> list[str]:
    """The issue's two targets at `limit` for `solver`, with the cells that miss."""
    name = f"milp-{solver}@{limit:g}s"
    pairs = _ratios(_by_cell(rows), name)
    if not pairs:
        return [f"{name}: no cells (run the grid with --limits including {limit:g})"]
    worse = [r for m, f, r in pairs if m > f + TOL]
    ratios = [_ratio(m, f) for m, f, _ in pairs]
    mean_ratio = statistics.fmean(ratios)
    flux_optimal = sum(1 for m, f, r in pairs
                       if r["lower_bound"] is not None and f <= r["lower_bound"] + 1e-7)
    certified = sum(1 for m, _, r in pairs if r["status"] == "optimal")
    gaps = [m - r["lower_bound"] for m, _, r in pairs if r["lower_bound"] is not None]
    lines = [
        f"MILP ({solver}) <= Flux in every cell at {limit:g} s: "
        f"{'yes' if not worse else 'no'} ({len(worse)} of {len(pairs)} cells violating)",
        f"mean MILP/Flux ratio at {limit:g} s: {mean_ratio:.3f} (target <= {TARGET_RATIO}) "
        f"-> {'met' if mean_ratio <= TARGET_RATIO else 'MISSED'}; median "
        f"{statistics.median(ratios):.3f}; ratio of mean LDs "
        f"{statistics.fmean(m for m, _, _ in pairs) / statistics.fmean(f for _, f, _ in pairs):.3f}",
        f"  cells where the bound proves Flux optimal (ratio 1.0 is the best possible): "
        f"{flux_optimal}; MILP plans certified optimal: {certified} of {len(pairs)}; "
        f"mean gap LD - bound: {statistics.fmean(gaps) if gaps else float('nan'):.3f}",
    ]
    for r in worse[:10]:
        lines.append(f"  violating: {r['cell']} milp {r['load_distance']:.4f}")
    lines += _baseline_lines(_by_cell(rows), name, limit)
    by_cluster: dict[str, list[float]] = defaultdict(list)
    for m, f, r in pairs:
        by_cluster[r["cluster"]].append(_ratio(m, f))
    lines.append("  mean ratio per cluster: " + ", ".join(
        f"{c} {statistics.fmean(v):.3f}" for c, v in by_cluster.items()))
    by_scenario: dict[str, list[tuple[float, float, Row]]] = defaultdict(list)
    for m, f, r in pairs:
        by_scenario[scenario(r)].append((m, f, r))
    if len(by_scenario) > 1 or "uniform" not in by_scenario:
        for scen, some in by_scenario.items():
            gaps = [m - r["lower_bound"] for m, _, r in some if r["lower_bound"] is not None]
            before = statistics.fmean(r["load_distance_before"] for *_, r in some)
            lines.append(
                f"  {scen}: {len(some)} cells, LD before {before:.2f}"
                f", MILP {statistics.fmean(m for m, _, _ in some):.3f}, Flux "
                f"{statistics.fmean(f for _, f, _ in some):.3f}, mean ratio "
                f"{statistics.fmean(_ratio(m, f) for m, f, _ in some):.3f}, mean gap to bound "
                f"{statistics.fmean(gaps) if gaps else float('nan'):.3f}, max gap "
                f"{max(gaps) if gaps else float('nan'):.3f}, infeasible "
                f"{sum(1 for *_, r in some if r['status'] == 'infeasible')}")
    return lines


def _baseline_lines(cells: dict[str, dict[str, Row]], name: str, limit: float) -> list[str]:
    """MILP ≤ min(Flux, greedy) in every cell (within REL_TOL), and the cells that miss."""
    worse = []
    total = 0
    for plans in cells.values():
        if name not in plans or "flux" not in plans or "greedy" not in plans:
            continue
        total += 1
        best = min(plans["flux"]["load_distance"], plans["greedy"]["load_distance"])
        milp = plans[name]["load_distance"]
        if milp > best + REL_TOL * max(1.0, best):
            worse.append((plans[name]["cell"], milp, best))
    if not total:
        return []
    lines = [f"MILP <= min(Flux, greedy) in every cell at {limit:g} s: "
             f"{'yes' if not worse else 'no'} ({len(worse)} of {total} cells violating)"]
    lines += [f"  violating: {c} milp {m:.4f} > {b:.4f}" for c, m, b in worse[:10]]
    return lines


def solver_lines(rows: list[Row]) -> list[str]:
    """HiGHS vs CBC per time limit: mean LD, mean ratio to Flux, wins, mean wall time."""
    cells = _by_cell(rows)
    limits = sorted({r["time_limit_s"] for r in rows if r["strategy"] == "milp"})
    lines = [f"{'limit':>6}  {'solver':<6}{'cells':>6}{'mean LD':>9}{'LD/Flux':>9}"
             f"{'certified':>10}{'wall_s':>8}"]
    for limit in limits:
        for solver in ("highs", "cbc"):
            pairs = _ratios(cells, f"milp-{solver}@{limit:g}s")
            if not pairs:
                continue
            certified = sum(1 for *_, r in pairs if r["status"] == "optimal")
            lines.append(
                f"{limit:>5g}s  {solver:<6}{len(pairs):>6}"
                f"{statistics.fmean(m for m, _, _ in pairs):>9.3f}"
                f"{statistics.fmean(_ratio(m, f) for m, f, _ in pairs):>9.3f}{certified:>10}"
                f"{statistics.fmean(r['wall_s'] for *_, r in pairs):>8.2f}")
        highs = {r["cell"]: m for m, _, r in _ratios(cells, f"milp-highs@{limit:g}s")}
        cbc = {r["cell"]: m for m, _, r in _ratios(cells, f"milp-cbc@{limit:g}s")}
        both = highs.keys() & cbc.keys()
        if both:
            better = sum(1 for c in both if highs[c] < cbc[c] - TOL)
            worse = sum(1 for c in both if highs[c] > cbc[c] + TOL)
            lines.append(f"{'':>8}HiGHS better in {better}, CBC better in {worse}, equal in "
                         f"{len(both) - better - worse} of {len(both)} cells")
    for name in ("flux", "greedy"):
        ld = [p[name]["load_distance"] for p in cells.values() if name in p]
        if ld:
            lines.append(f"{'':>8}{name}: mean LD {statistics.fmean(ld):.3f} over {len(ld)} cells")
    return lines


def summary(rows: list[Row]) -> str:
    limits = sorted({r["time_limit_s"] for r in rows if r["strategy"] == "milp"})
    lines = ["Targets (paper §5.1, Figures 2-4):"]
    lines += target_lines(rows, "highs", 2.0)
    if any(r["solver"] == "cbc" for r in rows):
        lines += target_lines(rows, "cbc", 2.0)
    for limit in limits:
        if limit != 2.0:
            lines += target_lines(rows, "highs", limit)[:2]
            lines += _baseline_lines(_by_cell(rows), f"milp-highs@{limit:g}s", limit)
    lines += ["", "HiGHS vs CBC:", *solver_lines(rows)]
    return "\n".join(lines)
