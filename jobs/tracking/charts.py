"""The pictures of a plan's MLflow run: node loads before/after, and the heaviest pairs.

`node_loads.png` shows each node's load before and after the plan with the mean; `comm_graph.png`
the k heaviest communicating key-group pairs (paper §4.3.2: collocation), green where both ends
share a node, before and after. jobs/tracking/store.py logs them with every plan attempt.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

import numpy as np

from placement.graphpart import pair_rates
from placement.metrics import node_loads
from placement.model import ClusterState, Plan

__all__ = ["CHART_BARS_UP_TO", "COMM_GRAPH_PAIRS", "comm_graph", "heaviest_pairs", "load_chart"]


#: up to this many nodes the load chart has a labelled pair of bars per node; beyond, it draws
#: the loads sorted (one line before, one after) in a figure of fixed size: a bar and a tick label
#: per node of a 1,000-node job made a 50,000-pixel-wide PNG that took 12 s to draw
CHART_BARS_UP_TO = 60


def load_chart(state: ClusterState, plan: Plan, path: Path,
               loads: tuple[Mapping[str, float], Mapping[str, float]] | None = None) -> None:
    """The node loads before and after (`loads`: (before, after) when the caller has them).

    Up to `CHART_BARS_UP_TO` nodes a bar per node and plan; beyond, each plan's node loads
    sorted from the most to the least loaded, as two lines (a constant number of artists: the
    figure costs the same at 100 and at 10,000 nodes; nodes.csv has every node's numbers)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    before, after = loads or (node_loads(state, state.assignment),
                              node_loads(state, plan.assignment))
    nodes = sorted(set(before) | set(after))
    mean = sum(after.values()) / max(1, len(after))
    if len(nodes) <= CHART_BARS_UP_TO:
        xs = range(len(nodes))
        fig, ax = plt.subplots(figsize=(max(6.0, 0.45 * len(nodes) + 2), 3.6), dpi=110)
        ax.bar([x - 0.2 for x in xs], [before.get(n, 0.0) for n in nodes], 0.4, label="before")
        ax.bar([x + 0.2 for x in xs], [after.get(n, 0.0) for n in nodes], 0.4, label="after")
        ax.set_xticks(list(xs), nodes, rotation=45, ha="right", fontsize=8)
    else:
        fig, ax = plt.subplots(figsize=(8.0, 3.6), dpi=110)
        for label, values in (("before", before), ("after", after)):
            ranked = np.sort(np.fromiter((values.get(n, 0.0) for n in nodes), float,
                                         len(nodes)))[::-1]
            ax.plot(np.arange(len(nodes)), ranked, drawstyle="steps-mid", label=label)
        ax.set_xlabel(f"{len(nodes):,} nodes, most loaded first (each node: nodes.csv)")
    ax.axhline(mean, color="grey", linestyle="--", linewidth=1, label=f"mean {mean:.1f}%")
    ax.set_ylabel("node load (% of reference node)")
    ax.set_title(
        f"load distance {plan.before.load_distance:.2f} -> {plan.after.load_distance:.2f}, "
        f"{plan.migrations} migrations"
    )
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# ---- collocation (paper §4.3.2): the communication graph's heaviest pairs ----------------------

COMM_GRAPH_PAIRS = 20


def heaviest_pairs(state: ClusterState, after: Mapping[str, str], k: int
                    ) -> list[tuple[str, str, float]]:
    """The k heaviest key-group pairs, out(g_i, g_j) + out(g_j, g_i), heaviest first; among
    equally heavy pairs those whose collocation the plan changes come first."""
    lo, hi, rates = pair_rates(state).undirected(positive_only=False)  # on the columns
    before = state.assignment
    units = state.comm.units

    def order(item: tuple[tuple[str, str], float]) -> tuple[float, bool, tuple[str, str]]:
        (a, b), rate = item
        same = (before[a] == before[b]) == (after[a] == after[b])
        return (-rate, same, (a, b))

    # only pairs at least as heavy as the k-th heaviest can be among the first k (`order` sorts
    # by rate first): at 10^4 key groups there are millions of pairs and k is 20
    if k <= 0:
        return []
    floor = float(np.partition(rates, len(rates) - k)[len(rates) - k]) if len(rates) > k else -math.inf
    pick = np.flatnonzero(rates >= floor)
    top = sorted((((units[int(lo[i])], units[int(hi[i])]), float(rates[i])) for i in pick),
                 key=order)[:k]
    return [(a, b, rate) for (a, b), rate in top]


def comm_graph(state: ClusterState, plan: Plan, path: Path) -> None:
    """Bars of the heaviest pairs before and after the plan: green collocated, red remote."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pairs = heaviest_pairs(state, plan.assignment, COMM_GRAPH_PAIRS)
    labels = [f"{a} - {b}" for a, b, _ in pairs][::-1]
    rates = [rate for _, _, rate in pairs][::-1]
    fig, axes = plt.subplots(1, 2, figsize=(11, max(3.0, 0.28 * len(pairs) + 1.5)), dpi=110,
                             sharey=True)
    for ax, (title, assignment, factor) in zip(axes, (
            ("before", state.assignment, plan.before.collocation_factor),
            ("after", plan.assignment, plan.after.collocation_factor)), strict=True):
        colors = ["tab:green" if assignment[a] == assignment[b] else "tab:red"
                  for a, b, _ in pairs][::-1]
        ax.barh(range(len(pairs)), rates, color=colors)
        shown = colors.count("tab:green")
        ax.set_title(f"{title}: {shown}/{len(pairs)} shown collocated, collocation factor "
                     f"{factor:.1f}%", fontsize=9)
        ax.set_xlabel("rate, both directions (as in comm_stats)")
    axes[0].set_yticks(range(len(pairs)), labels, fontsize=7)
    fig.suptitle(f"top {len(pairs)} communicating key-group pairs "
                 "(green: same node, red: remote)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
