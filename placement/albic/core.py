"""ALBIC driver: Algorithm 2 of the paper (§4.3.2), steps 1–4 and the maxPL recursion.

    albic(maxLD, maxPL, stepPL, sF):
        1. scores: colGrps, toBeColGrps                              (scores.py)
        2. partitions of the collocated sets, ≤ maxMigrCost and ≤ maxPL  (partitions.py)
        3. the best toBeColGrps pair as a pin (paper's three cases)   (collocate.py)
        4. solve the constrained MILP                                 (contract.py)
           if LD(solution) > maxLD: return albic(maxLD, maxPL − stepPL, stepPL, sF)
    at maxPL ≤ 0 there is one partition per key group and no pin: the plain MILP.
    ours: a level (steps 2-4) runs only while its cost |K| + LEVEL_OVERHEAD fits `level_work`

The recursion is a loop. Step 1 does not depend on maxPL and runs once (not at all when the
budget pays for no level); steps 2–4 run per level, drawing from the same seeded generator.
The paper's recursion has no stop but maxPL ≤ 0; ours has a work budget for the levels as a
whole (`level_work`, in key-group levels): a level costs |K| + LEVEL_OVERHEAD of it (its
constrained MILP places every key group, its exchange search and contraction walk them all),
and a level starts only while its cost fits what is left, so how many levels run is a function of the input and the parameters, the same on a busy
machine as on a quiet one (placement/determinism.py). At 32,768 key groups the default budget
runs no level: ALBIC is then the plain MILP (maxPL 0), which the message says. The clock is the
safety net: `time_limit_s` covers the whole call, a third of it is kept for the plain MILP (the
fallback), a level starts only while the other two thirds last and its constrained MILP (on the
work budget) may use all of them; a level the net stops is recorded on the plan as a clock cut.
A call without a work budget (`work_limit` and `node_limit` None: the benchmarks' clock-limited
comparison) runs the levels on the clock instead, as before: the first always runs, each
constrained MILP gets half of the levels' time left after its steps 2–3.

A level is accepted when its d (the MILP's load distance: LD, or how far a node of B sits
above mean if further) is at most maxLD and it leaves no node of A above `SATURATED` (100 %)
utilisation, unless the mean itself is above it: near saturation maxLD alone let a level keep a
node at 104 % (mean 95 %, d 9 ≤ 10) that the plain MILP relieves. A level whose MILP is
INFEASIBLE is never accepted.

When no level meets maxLD the plan is the plain MILP's, which is never worse than the current
allocation, greedy or Flux (milp/core.py), so ALBIC never falls back to "nothing"; only if a
constrained level balanced strictly better than the plain MILP within its time (a short limit
on a busy machine) is that level's plan returned instead. The status is that of the MILP that
produced the plan (for a constrained level: optimal *for the constrained problem*); the lower
bound is the plain MILP's where it ran (valid for every plan within the budget), else None.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from placement.albic.collocate import improve_collocation
from placement.albic.contract import solve_constrained
from placement.albic.params import LEVEL_OVERHEAD, AlbicManyParams, AlbicParams
from placement.albic.partitions import maintain_collocation
from placement.albic.scores import calc_scores
from placement.common import MIN_SOLVE_S, make_plan, relaxed_five
from placement.determinism import clock_cut, work_budgeted
from placement.metrics import max_deviation, mean_load, node_loads
from placement.model import Budget, ClusterState, Phase, Plan, SolverStatus

__all__ = ["level_cost", "plan_albic", "plan_albic_many"]

PLAIN_SHARE = 1 / 3  # of time_limit_s, kept for the plain MILP at maxPL 0
SATURATED = 100.0  # % utilisation: a constrained level may not leave a node of A above it


def _check_edges(state: ClusterState) -> None:
    """Re-check out(): the model validates at construction, but ALBIC depends on it entirely.
    On the columns (placement/comm.py): every pair's ends are units of the state, every rate a
    finite number >= 0; the first offending pair is named (an object per edge cost seconds at
    32,768 units)."""
    comm = state.comm
    if len(comm.rate) == 0:
        return
    known = {k.id for k in state.keygroups}
    unknown = [i for i, u in enumerate(comm.units) if u not in known]
    if unknown:
        bad = np.isin(comm.src, unknown) | np.isin(comm.dst, unknown)
        at = int(np.flatnonzero(bad)[0])
        src, dst = comm.units[int(comm.src[at])], comm.units[int(comm.dst[at])]
        end = src if src not in known else dst
        raise ValueError(f"albic: edge {src!r}->{dst!r} names unknown key group {end!r}")
    rate = np.asarray(comm.rate, dtype=float)
    wrong = ~(np.isfinite(rate) & (rate >= 0))
    if wrong.any():
        at = int(np.flatnonzero(wrong)[0])
        src, dst = comm.units[int(comm.src[at])], comm.units[int(comm.dst[at])]
        raise ValueError(f"albic: edge {src!r}->{dst!r} has rate {comm.rate[at]!r}; rates "
                         f"must be finite numbers >= 0")


def _share(budget: Budget, share: float) -> Budget:
    """The part of the budget step 3 may spend on pins (all of it for the paper's ALBIC)."""
    if share >= 1:
        return budget
    cost = None if budget.max_migration_cost is None else budget.max_migration_cost * share
    count = None if budget.max_migrations is None else math.floor(budget.max_migrations * share)
    return Budget(max_migration_cost=cost, max_migrations=count)


def _run(state: ClusterState, budget: Budget, p: AlbicParams, *, many: bool,
         pair_share: float) -> Plan:
    from placement.registry import run_inner  # the registry imports this module (ALBIC)

    started = time.perf_counter()
    _check_edges(state)
    max_ld, max_pl, step_pl, s_f = p.max_ld, p.max_pl, p.step_pl, p.s_f
    time_limit_s, seed = p.time_limit_s, p.seed
    milp_params: dict[str, Any] = {"solver": p.solver, "resource_caps": p.resource_caps}
    deadline = started + time_limit_s
    rng = random.Random(seed)
    budgeted = work_budgeted()
    cost, work_left = level_cost(state), p.level_work
    # step 1 serves the levels only: when the budget pays for none (32,768 key groups), its
    # second or so over every pair is not spent
    no_level = budgeted and cost > work_left
    scores = calc_scores(state, state.assignment, s_f) if not no_level else None
    allowance = _share(budget, pair_share if many else 1.0)
    notes = [] if scores is None else [f"{len(scores.col_grps)} collocated / "
                                       f"{len(scores.to_be_col_grps)} to-be-collocated pairs "
                                       f"above avg·sF"]
    reserve = PLAIN_SHARE * time_limit_s
    best: tuple[float, dict[str, str], SolverStatus, float] | None = None  # d, plan, status, maxPL
    level_pl = max_pl
    phases: list[Phase] = []  # one per maxPL level (steps 2-4), then the plain MILP
    while level_pl > 1e-9:
        t0 = time.perf_counter()
        if scores is None or (budgeted and cost > work_left):  # the levels' work budget is
            # spent: where the levels stop is a function of the input, never of the load
            notes.append(f"maxPL {level_pl:g} and below: not tried, the levels' work budget "
                         f"is spent (level_work {p.level_work:,} key-group levels, a level "
                         f"costs {cost:,} here)")
            break
        if (phases or budgeted) and t0 >= deadline - reserve:  # the levels' time is used up:
            clock_cut("ALBIC's maxPL levels")  # the plain MILP's reserve is left for the fallback
            notes.append(f"maxPL {level_pl:g} and below: not tried, the levels' time "
                         f"({time_limit_s - reserve:.1f} s) was used up")
            break
        work_left -= cost
        parts = maintain_collocation(state, scores.col_grps, scores.out, budget, level_pl, rng,
                                     seed=seed)
        imp = improve_collocation(state, scores.to_be_col_grps, scores.out, parts, allowance,
                                  level_pl, rng, many=many, rates=scores.to_be_col_rates)
        # on a work budget the constrained solve stops on it, the levels' time left its net;
        # on the clock it gets half the levels' time left after steps 2-3
        share = 1.0 if budgeted else 0.5
        limit = max(MIN_SOLVE_S, (deadline - reserve - time.perf_counter()) * share)
        solved = solve_constrained(state, budget, imp.units, imp.pins,
                                   (imp.forced_count, imp.forced_cost), time_limit_s=limit,
                                   milp_params={**milp_params, "seed": seed})
        d = max_deviation(state, solved.assignment)
        pairs = ", ".join(f"{c.pair[0]}+{c.pair[1]} case {c.case} -> {c.node}"
                          for c in imp.constraints[:3])
        more = f" (+{len(imp.constraints) - 3} more)" if len(imp.constraints) > 3 else ""
        chosen = f": {pairs}{more}" if pairs else ""
        notes.append(f"maxPL {level_pl:g}: {len(parts)} partitions, {len(imp.constraints)} "
                     f"pair(s){chosen}; constrained MILP {solved.milp.status.value}, "
                     f"LD {d:.3f}")
        phases.append(Phase(f"maxPL {level_pl:g}", time.perf_counter() - t0,
                            solved.milp.status.value))
        if solved.milp.status is not SolverStatus.INFEASIBLE:
            if d <= max_ld and not _saturates(state, solved.assignment):
                return _plan(state, solved.assignment, solved.milp.status, None, notes,
                             phases)
            if best is None or d < best[0]:
                best = (d, solved.assignment, solved.milp.status, level_pl)
        level_pl -= step_pl
    t0 = time.perf_counter()
    left = max(MIN_SOLVE_S, deadline - t0)
    plain = run_inner("milp", state, budget, {**milp_params, "time_limit_s": left, "seed": seed})
    phases.append(Phase("plain MILP", time.perf_counter() - t0, plain.status.value))
    plain_d = max_deviation(state, plain.assignment)
    notes.append(f"maxPL 0: plain MILP {plain.status.value}, LD {plain_d:.3f}"
                 + (f" ({plain.message})" if plain.message else ""))
    if best is not None and best[0] < plain_d - 1e-9 * max(1.0, plain_d):
        d, assignment, status, pl = best
        notes.append(f"the plan of maxPL {pl:g} (LD {d:.3f}) is kept: it balances better than "
                     f"the plain MILP did in its time")
        return _plan(state, assignment, status, plain.lower_bound, notes, phases)
    # the plain MILP's plan as it is (its moves and metrics are what _plan would recompute on
    # the same state and assignment: a second or so at 32,768 key groups), with ALBIC's notes
    bound = 0.0 if plain.lower_bound is None else plain.lower_bound
    note = relaxed_five(plain_d, mean_load(state), bound)
    return dataclasses.replace(plain, message="; ".join(filter(None, [*notes, note])),
                               phases=tuple(phases))


def level_cost(state: ClusterState) -> int:
    """One maxPL level's charge against `level_work`: |K| + LEVEL_OVERHEAD key-group levels.
    Measured per level (steps 2-4) at ~80 µs per key group on this machine from 400 to 32,768
    key groups (docs/algorithms.md); a top-k landing keeps at most k pairs per unit
    (jobs/facets/comm.py), so the pairs step 3 orders grow with |K| too."""
    return len(state.keygroups) + LEVEL_OVERHEAD


def _saturates(state: ClusterState, assignment: Mapping[str, str]) -> bool:
    """A node of A above SATURATED utilisation while the mean is not."""
    loads = node_loads(state, assignment)
    top = max(loads[n.id] for n in state.nodes if not n.marked_for_removal)
    return top > SATURATED + 1e-9 and mean_load(state) <= SATURATED


def _plan(state: ClusterState, assignment: Mapping[str, str], status: SolverStatus,
          bound: float | None, notes: list[str], phases: list[Phase]) -> Plan:
    """The returned plan, its message saying so when constraint (5) does not hold."""
    d = max_deviation(state, assignment)
    note = relaxed_five(d, mean_load(state), 0.0 if bound is None else bound)
    return make_plan(state, assignment, status=status, lower_bound=bound,
                     message="; ".join(filter(None, [*notes, note])), phases=tuple(phases))


def plan_albic(state: ClusterState, budget: Budget, params: AlbicParams) -> Plan:
    """ALBIC as in the paper: one beneficial pair per invocation (Algorithm 2).

    maxLD = `max_ld` (load distance, percentage points), maxPL = `max_pl` (partition load, % of
    a reference node, in (0, 100]), stepPL = `step_pl`, sF = `s_f` (> 0).
    """
    return _run(state, budget, params, many=False, pair_share=1.0)


def plan_albic_many(state: ClusterState, budget: Budget, params: AlbicManyParams) -> Plan:
    """ALBIC adding as many beneficial pairs per invocation as `pair_share` of the budget allows.

    Pairs are taken in step 3's order (largest out() first) while the forced migrations of all
    pins fit `pair_share` × the budget; the rest of the budget is left to the MILP's balancing.
    """
    return _run(state, budget, params, many=True, pair_share=params.pair_share)
