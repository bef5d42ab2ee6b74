"""Why each move of a plan was made, in the words and the number of the planner's family.

A strategy declares its objective in the strategy table (schemas/strategies.py `Objective`,
whose `reason` names the family's words); this module gives every move of a plan

- the family's reason: what the move is worth in the in-force objective, as the objective's
  value with the move undone (the rest of the plan kept) against the plan's value, signed so
  that a positive number is a gain; a plan of one move thus gains exactly before − after
  (or after − before for an objective to maximise):

  | objective | family | reason, number |
  |---|---|---|
  | load_distance | MILP, greedy, flux, random, drain | load relieved: the source node's load the key group takes away, % of a reference node |
  | collocation_factor | ALBIC, COLA | pair collocated: the heaviest partner now on the same node; points of its traffic made local (a move that collocates nothing, ALBIC's balancing, is "load relieved") |
  | stream_traffic | Herding | traffic saved: Σ_j w(∪ S_q) with the move undone − with it (§2.1) |
  | cost_total | SPRAWL | WAN cost saved: Formula 3.1 with the move undone − with it |
  | feasible_set_ratio | ROD | feasible-set ratio gained: F/F* with it − with the move undone (§2.3) |
  | utilisation_imbalance | Consistent Grouping | utilisation band left: I = max U − mean U with the move undone − with it (§3), the source's U against the mean |

- before it, whatever the family: "node drained" when the source is marked for removal (scale
  in) or excluded by the job's constraints, "scale out" when the target is a node the plan adds.

Load distance and an objective to maximise are "max"-type measures: a move in the middle of a
plan can be worth 0 in them (another node sets the max); the load relieved is then the reason
that stays readable, so the LD family's number is the source's relief, not the undo gain.
The families are imported inside the functions, as in placement/objectives.py.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from placement.metrics import mean_load, node_loads
from placement.model import ClusterState, KeyGroup, Move, Node, Plan
from placement.objectives import EVALUATORS
from schemas.strategies import STRATEGIES, Objective

__all__ = ["REASON_CODES", "MoveReason", "explain", "family_params", "partners_of"]

#: every reason code a move can carry (moves.csv `reason_codes`)
REASON_CODES = ("node_drained", "scale_out", "load_relieved", "pair_collocated",
                "traffic_saved", "wan_cost_saved", "feasible_set_gained", "band_left")


@dataclass(frozen=True)
class MoveReason:
    """One reason of one move: its code, the number (the objective's unit, > 0 helps; None for
    a reason without one), and the sentence an operator reads."""

    code: str
    value: float | None
    text: str


@dataclass(frozen=True)
class _Ctx:
    state: ClusterState
    plan: Plan
    objective: Objective
    params: Any
    before: Mapping[str, float]  # node loads before and after the plan
    after: Mapping[str, float]
    #: per moved unit, (objective without the move, with it) where the family computes every
    #: move's undo at once (Herding's traffic: one count of readers, not one evaluation a move)
    undone: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    # looked up once per plan, not once per move (a plan of 200 moves on 32,768 units)
    @functools.cached_property
    def keygroups(self) -> dict[str, KeyGroup]:
        return {k.id: k for k in self.state.keygroups}

    @functools.cached_property
    def nodes(self) -> dict[str, Node]:
        return {n.id: n for n in self.state.nodes}

    @functools.cached_property
    def mean(self) -> float:
        return mean_load(self.state)

    @functools.cached_property
    def partners(self) -> dict[str, dict[str, float]]:
        return partners_of(self.state, {m.keygroup for m in self.plan.moves})


def partners_of(state: ClusterState, wanted: set[str]) -> dict[str, dict[str, float]]:
    """kg -> partner -> out(kg, p) + out(p, kg), for the key groups in `wanted` (a plan's moved
    ones: a job of 10^4 key groups has millions of pairs, a plan a few dozen moves). The pairs
    touching `wanted` are picked on the columns, so only they are walked in Python, in pair
    order (the sums are the same floats as a walk over every pair; self pairs are not pairs)."""
    import numpy as np

    from placement.graphpart import pair_rates

    rates = pair_rates(state)
    units, position = rates.comm.units, rates.comm.position
    inside = np.zeros(len(units), bool)
    inside[[position[k] for k in wanted if k in position]] = True
    pick = np.flatnonzero(inside[rates.src] | inside[rates.dst])
    out: dict[str, dict[str, float]] = {}
    for s, d, rate in zip(rates.src[pick].tolist(), rates.dst[pick].tolist(),
                          rates.rate[pick].tolist(), strict=True):
        src, dst = units[s], units[d]
        if src == dst:
            continue
        if src in wanted:
            out.setdefault(src, {})[dst] = out.setdefault(src, {}).get(dst, 0.0) + rate
        if dst in wanted:
            out.setdefault(dst, {})[src] = out.setdefault(dst, {}).get(src, 0.0) + rate
    return out


def _undone(plan: Plan, move: Move) -> dict[str, str]:
    return {**plan.assignment, move.keygroup: move.src}


def _undo_gain(ctx: _Ctx, move: Move, evaluate: Callable[[Mapping[str, str]], float | None]
               ) -> tuple[float, float, float] | None:
    """(gain, value without the move, value of the plan), None when the family cannot
    evaluate the state (no fitted load model)."""
    with_move, without = evaluate(ctx.plan.assignment), evaluate(_undone(ctx.plan, move))
    if with_move is None or without is None:
        return None
    sign = 1.0 if ctx.objective.direction == "min" else -1.0
    return sign * (without - with_move), without, with_move


def _load_relieved(ctx: _Ctx, move: Move) -> MoveReason:
    kg, src = ctx.keygroups[move.keygroup], ctx.nodes[move.src]
    relief = kg.load / src.capacity
    return MoveReason("load_relieved", relief, (
        f"load relieved: {move.src} {ctx.before[move.src]:.1f}% -> {ctx.after[move.src]:.1f}% "
        f"(mean {ctx.mean:.1f}%), {relief:.2f} points of it this key group's; "
        f"{move.dst} {ctx.before.get(move.dst, 0.0):.1f}% -> {ctx.after.get(move.dst, 0.0):.1f}%"))


def _pair_collocated(ctx: _Ctx, move: Move) -> MoveReason:
    mine = ctx.partners.get(move.keygroup, {})
    total = sum(mine.values())
    if total <= 0:
        return _load_relieved(ctx, move)

    def local(where: Mapping[str, str], node: str) -> float:
        return 100.0 * sum(r for p, r in mine.items() if where.get(p) == node) / total

    gained = local(ctx.plan.assignment, move.dst) - local(ctx.state.assignment, move.src)
    mates = sorted((p for p in mine if ctx.plan.assignment.get(p) == move.dst),
                   key=lambda p: (-mine[p], p))
    if not mates or gained <= 0:  # a balancing move of ALBIC (LD within maxLD): say that
        relieved = _load_relieved(ctx, move)
        return MoveReason(relieved.code, relieved.value, (
            f"{relieved.text}; no pair collocated ({local(ctx.state.assignment, move.src):.0f}%"
            f" -> {local(ctx.plan.assignment, move.dst):.0f}% of its traffic local)"))
    return MoveReason("pair_collocated", gained, (
        f"pair collocated: {move.keygroup} with {mates[0]} ({mine[mates[0]]:.3g} tuples/s) on "
        f"{move.dst}; {gained:+.1f} points of its traffic local "
        f"({local(ctx.state.assignment, move.src):.0f}% -> "
        f"{local(ctx.plan.assignment, move.dst):.0f}%)"))


def _saved(code: str, words: str) -> Callable[[_Ctx, Move], MoveReason | None]:
    """A family whose number is the undo gain of its objective's own evaluator."""

    def reason(ctx: _Ctx, move: Move) -> MoveReason | None:
        evaluator = EVALUATORS[ctx.objective.name]
        known = ctx.undone.get(move.keygroup)
        if known is not None:
            sign = 1.0 if ctx.objective.direction == "min" else -1.0
            found: tuple[float, float, float] | None = (sign * (known[0] - known[1]), *known)
        else:
            found = _undo_gain(ctx, move, lambda a: evaluator(ctx.state, a, ctx.params))
        if found is None:
            return None
        gain, without, with_move = found
        if math.isinf(without) and math.isfinite(with_move):  # e.g. SPRAWL: a pinned unit
            return MoveReason(code, gain, (
                f"{words}: without this move the placement is one {ctx.objective.label} "
                f"forbids ({ctx.objective.label} inf; {with_move:.4g} with it)"))
        return MoveReason(code, gain, (
            f"{words}: {gain:.4g} {ctx.objective.unit} ({ctx.objective.label} {without:.4g} "
            f"without this move, {with_move:.4g} with it)"))
    return reason


def _band_left(ctx: _Ctx, move: Move) -> MoveReason:
    from placement.consistent_grouping.metrics import cg_metrics

    found = _undo_gain(ctx, move, lambda a: cg_metrics(ctx.state, a)["utilisation_imbalance"])
    assert found is not None  # cg_metrics always answers
    gain, without, with_move = found
    active = [n.id for n in ctx.state.nodes if not n.marked_for_removal]
    mean = sum(ctx.before[n] for n in active) / len(active) if active else 0.0
    return MoveReason("band_left", gain, (
        f"utilisation band left: {move.src} at {ctx.before[move.src]:.1f}% against the mean "
        f"{mean:.1f}%, {ctx.after[move.src]:.1f}% after; imbalance {without:.4g} without this "
        f"move, {with_move:.4g} with it ({gain:+.4g})"))


#: the family's reason, by the name of the objective it declares
_REASONS: Mapping[str, Callable[[_Ctx, Move], MoveReason | None]] = {
    "load_distance": _load_relieved,
    "collocation_factor": _pair_collocated,
    "stream_traffic": _saved("traffic_saved", "traffic saved"),
    "cost_total": _saved("wan_cost_saved", "WAN cost saved"),
    "feasible_set_ratio": _saved("feasible_set_gained", "feasible-set ratio gained"),
    "utilisation_imbalance": _band_left,
}


def _around(ctx: _Ctx, move: Move) -> list[MoveReason]:
    """The family-independent reasons: a drained source, an added target."""
    out = []
    marked = {n.id for n in ctx.state.nodes if n.marked_for_removal}
    if move.src in marked or move.src in ctx.state.constraints.exclude_nodes:
        why = ("marked for removal (scale in)" if move.src in marked
               else "excluded by the job's constraints")
        left = sum(1 for node in ctx.plan.assignment.values() if node == move.src)
        out.append(MoveReason("node_drained", None, f"node drained: {move.src} is {why}; "
                              f"{left} unit(s) left on it after the plan"))
    if move.dst in ctx.plan.scaling.nodes_to_add:
        out.append(MoveReason("scale_out", None, f"scale out: {move.dst} is a node this plan "
                              "adds"))
    return out


def family_params(strategy: str, raw: Mapping[str, Any] | None) -> Any:
    """What `strategy`'s family evaluates its objective with, from the job's
    `strategy_params` table of it: SPRAWL's parameters (β, its objective, queries); None for
    the others (and for a table that does not validate: the defaults are used)."""
    entry = STRATEGIES.get(strategy)
    if entry is None or entry.objective.name != "cost_total":
        return None
    from placement.sprawl.params import SprawlParams

    try:
        return SprawlParams.model_validate(dict(raw or {}))
    except ValueError:
        return None


def _undone_at_once(state: ClusterState, plan: Plan, objective: Objective
                    ) -> dict[str, tuple[float, float]]:
    """Every move's (without, with) for a family that computes them at once ({} otherwise)."""
    if objective.name != "stream_traffic" or not plan.moves or "sources" not in state.facets:
        return {}
    from placement.herding.metrics import undo_traffic

    try:
        return undo_traffic(state, plan.assignment, [(m.keygroup, m.src) for m in plan.moves])
    except Exception:  # an audit line never fails the cycle: each move is evaluated afresh
        return {}


def explain(state: ClusterState, plan: Plan, params: Any = None,
            loads: tuple[Mapping[str, float], Mapping[str, float]] | None = None
            ) -> list[Sequence[MoveReason]]:
    """Per move of `plan` (in order) its reasons: drained/added nodes first, then the family's
    own, by the objective `plan.strategy` declares (load distance for an unknown name).
    `params`: what the family evaluates with (SPRAWL's parameters), `loads`: node loads
    before and after when the caller has them."""
    entry = STRATEGIES.get(plan.strategy)
    objective = entry.objective if entry is not None else STRATEGIES["milp"].objective
    before, after = loads or (node_loads(state, state.assignment),
                              node_loads(state, plan.assignment))
    ctx = _Ctx(state, plan, objective, params, before, after, _undone_at_once(state, plan,
                                                                              objective))
    family = _REASONS.get(objective.name, _load_relieved)
    out: list[Sequence[MoveReason]] = []
    for move in plan.moves:
        try:
            own = family(ctx, move)
        except Exception as exc:  # an audit line never fails the cycle: say why instead
            own = MoveReason(_load_relieved(ctx, move).code, None,
                             f"{objective.reason}: not computed ({type(exc).__name__}: {exc})")
        if own is None:  # e.g. ROD before its load model is fitted
            own = _load_relieved(ctx, move)
            own = MoveReason(own.code, own.value, f"{own.text} ({objective.label} not "
                             "computable on this state: no fitted load model)")
        out.append((*_around(ctx, move), own))
    return out
