"""Strategies by name, so the pipeline, the CLI and the benchmarks pick them alike.

The names, where each strategy and its params class live, and what each promises are one table,
`schemas/strategies.py`; this module registers every line of it.

**The strategy interface.** Every strategy is one function of one shape,

    plan(state: ClusterState, budget: Budget, params: P) -> Plan

with `P` its frozen `StrategyParams` subclass (placement/params.py; the table names it), always
given. A strategy only plans: it does not check its inputs, time itself or name its plan
(`make_plan` in placement/common.py leaves `strategy` and `wall_s` to the wrapper), and its
solver's timed steps are data on the plan (`Plan.phases`), not prose in its message. A strategy
that builds on another one (ALBIC falls back to the MILP, drain_then_balance balances with a
strategy named by its `balancer`) calls that one's own function by name (`run_inner`), so no
family imports another (tests/test_import_graph.py).

**The registered callable** (`get_strategy(name)`) is a wrapper, the part every strategy shares
(as Cruise Control's AbstractGoal); callers pass a params object or keywords:
`get_strategy("milp")(state, budget, MilpParams(w_b=0))` or `…(state, budget, w_b=0)`.
- it builds and validates the params (from a params object or keywords: an unknown, mistyped
  or out-of-range one is a ParamsError before any solving);
- the pre-check refuses an input the strategy cannot handle with a StrategyInputError (what,
  where, fix), never a bare exception from inside: wrong types, an assignment that leaves a
  unit without a known node, a facet the strategy needs and the state lacks, arrivals (units
  with no node) given to a strategy that does not place them;
- it hands the strategy the state in canonical order (placement/canonical.py), so the plan
  does not depend on the order in which nodes, units, sources or streams are listed;
- it times the strategy's call (`Plan.wall_s`) and names the plan after the registered
  strategy (`Plan.strategy`), so two names registered for one function stay apart;
- the post-check: the assignment is complete and names only known nodes, the budget is kept
  (unless the strategy ignores it on purpose), nothing moves onto a node of B, a heuristic
  never claims OPTIMAL, and a unit left on a node of B is explained in the plan's message
  (the wrapper adds the budget's reason when the budget cannot cover draining B; a strategy
  that leaves B undrained when the budget could drain it must say why itself).
- topology constraints (placement/constraints.py): the pre-check refuses a state whose
  constraints include a kind the strategy does not hold (the config loader refused such a job
  already); the post-check fails a plan that breaks any constraint more than the current
  assignment does, and a constraint the plan still breaks (the budget did not cover its repair)
  is named in the plan's message.
When the state has the load-model facet, it adds the plan's resilience (feasible-set ratio,
headroom; placement/rod/resilience.py) to the plan's facet metrics, whatever the strategy.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from placement.canonical import canonical_state, natural_key
from placement.common import StrategyInputError, fits, present_state
from placement.constraints import broken, held, raised
from placement.determinism import describe, watching
from placement.metrics import check_assignment
from placement.model import Budget, ClusterState, Plan, SolverStatus
from placement.params import ParamsError, StrategyParams, build_params
from placement.rod.resilience import with_resilience
from schemas.strategies import LOAD_DISTANCE, PIPELINE_PARAMS, STRATEGIES, Objective

__all__ = ["B_NOTE", "PIPELINE_PARAMS", "ParamsError", "PostConditionError", "Spec", "Strategy",
           "StrategyFn", "StrategyInputError", "build_strategy_params", "check_params", "get_spec",
           "get_strategy", "precheck", "register", "run_inner", "strategy_names"]

#: the words a plan's message uses when units stay on nodes marked for removal
B_NOTE = "marked for removal"

#: the strategies that weigh draining B against their own objective, and why a unit may stay
#: on B although the budget covers its move; every other strategy drains B whenever the
#: budget allows (the post-check holds it to that, unless its message says why not)
B_TRADE_OFF: Mapping[str, str] = {
    "milp": "the MILP weighs the load left on B (w_b) against d, so a unit whose move would "
            "raise d more, or that carries no load, may stay",
    "albic": "ALBIC's MILP weighs the load left on B (w_b) against d and collocation, so a "
             "unit whose move would not pay, or that carries no load, may stay",
    "albic_many": "ALBIC's MILP weighs the load left on B (w_b) against d and collocation, so "
                  "a unit whose move would not pay, or that carries no load, may stay",
    "greedy": "greedy moves only to lower d, so a unit on B whose move would not lower d "
              "stays (drain_then_balance drains first)",
    "random": "random moves are a floor every planner must beat: they do not aim at B",
    "sprawl": "SPRAWL minimises its cost (Formula 3.1): a unit pinned to a node of B, or one "
              "whose move would raise the cost, stays",
}

#: the registered, checked callable: `(state, budget, params=None, **params_as_keywords)`
Strategy = Callable[..., Plan]
#: a strategy's own function: `plan(state, budget, params) -> Plan` (module docstring)
StrategyFn = Callable[[ClusterState, Budget, Any], Plan]


class PostConditionError(AssertionError):
    """A strategy returned a plan that breaks a hard constraint: a bug in the strategy."""




@dataclass(frozen=True)
class Spec:
    """One registered strategy: its params class, its function, what it promises."""

    name: str
    params: type[StrategyParams]
    fn: StrategyFn
    guarantee: Literal["exact", "heuristic"]
    facets: tuple[str, ...] = ()
    keeps_budget: bool = True
    places_arrivals: bool = False
    #: what it optimises and what certifies it (schemas/strategies.py `Objective`)
    objective: Objective = LOAD_DISTANCE
    constraints: tuple[str, ...] = ()


_SPECS: dict[str, Spec] = {}
_WRAPPED: dict[str, Strategy] = {}


def check_plan(spec: Spec, state: ClusterState, budget: Budget, plan: Plan) -> None:
    """The hard post-conditions every strategy shares (PostConditionError otherwise)."""
    where = f"strategy {spec.name!r}"
    try:
        check_assignment(state, plan.assignment)
    except ValueError as exc:
        raise PostConditionError(f"{where}: incomplete assignment: {exc}") from exc
    if spec.keeps_budget and not fits(budget, plan.migrations, plan.migration_cost):
        raise PostConditionError(f"{where}: {plan.migrations} migrations costing "
                                 f"{plan.migration_cost:g} exceed {budget}")
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    onto_b = [m.keygroup for m in plan.moves if m.dst in marked]
    onto_b += [u for u in state.arrivals if plan.assignment[u] in marked]
    if onto_b:
        raise PostConditionError(f"{where}: moves {', '.join(sorted(onto_b))} onto a node of B")
    if spec.guarantee == "heuristic" and plan.status is SolverStatus.OPTIMAL:
        raise PostConditionError(f"{where}: a heuristic reported OPTIMAL")
    worse = raised(state, plan.assignment)
    if worse:
        raise PostConditionError(f"{where}: breaks the topology constraint(s) "
                                 f"{'; '.join(worse)} (more than the current assignment)")
    left = left_on_b(state, plan.assignment)
    if (left and B_NOTE not in plan.message and spec.name not in B_TRADE_OFF
            and can_drain(state, budget)):
        raise PostConditionError(f"{where}: leaves {', '.join(left)} on nodes marked for "
                                 "removal although the budget covers draining them, and its "
                                 "message does not say why")


def left_on_b(state: ClusterState, assignment: Mapping[str, str]) -> list[str]:
    """The units `assignment` leaves on nodes marked for removal (B), in id order."""
    marked = {n.id for n in state.nodes if n.marked_for_removal}
    return sorted((u for u, n in assignment.items() if n in marked), key=natural_key)


def can_drain(state: ClusterState, budget: Budget) -> bool:
    """True if the budget covers moving every unit that now sits on a node of B."""
    on_b = set(left_on_b(state, state.assignment))
    cost = sum(k.migration_cost for k in state.keygroups if k.id in on_b)
    return fits(budget, len(on_b), cost)


def explain_constraints(state: ClusterState, plan: Plan) -> Plan:
    """The plan, its message naming the constraints it still breaks (the current assignment
    broke them and the budget did not cover the repair)."""
    still = broken(state, plan.assignment) if state.constraints else []
    if not still:
        return plan
    note = f"topology constraint(s) still broken: {'; '.join(still)}"
    return dataclasses.replace(plan, message=f"{plan.message}; {note}" if plan.message else note)


def explain_b(spec: Spec, state: ClusterState, budget: Budget, plan: Plan) -> Plan:
    """The plan, its message saying which units stay on B and why (when the strategy did not
    say so itself): a hard constraint that no move off B keeps (named: neither the budget nor
    the trade-off would free such a unit), the budget cannot cover draining B, or the
    strategy's trade-off."""
    left = left_on_b(state, plan.assignment)
    if not left or B_NOTE in plan.message:
        return plan
    shown = ", ".join(left[:5]) + (f" and {len(left) - 5} more" if len(left) > 5 else "")
    kept = held(state, plan.assignment, left)
    whys = [f"{u} is held by hard constraint(s) {'; '.join(names)}: no node outside B takes "
            "it without breaking them" for u, names in list(kept.items())[:5]]
    if len(kept) > 5:
        whys.append(f"{len(kept) - 5} more are held likewise")
    if len(kept) < len(left):
        whys.append(B_TRADE_OFF[spec.name] if spec.name in B_TRADE_OFF and can_drain(state, budget)
                    else f"the budget ({_budget_text(budget)}) does not cover draining them "
                         "all this round")
    note = f"{len(left)} unit(s) stay on nodes marked for removal ({shown}): {'; '.join(whys)}"
    return dataclasses.replace(plan, message=f"{plan.message}; {note}" if plan.message else note)


def _budget_text(budget: Budget) -> str:
    parts = []
    if budget.max_migrations is not None:
        parts.append(f"max_migrations {budget.max_migrations}")
    if budget.max_migration_cost is not None:
        parts.append(f"max_migration_cost {budget.max_migration_cost:g}")
    return ", ".join(parts) or "unlimited"


def precheck(spec: Spec, state: ClusterState, budget: Budget) -> None:
    """Refuse, with what/where/fix, an input `spec`'s strategy cannot handle."""
    if not isinstance(state, ClusterState):
        raise StrategyInputError(f"strategy {spec.name!r}: the state is a "
                                 f"{type(state).__name__}, not a ClusterState",
                                 where="the state argument",
                                 fix="pass a placement.model.ClusterState")
    if not isinstance(budget, Budget):
        raise StrategyInputError(f"strategy {spec.name!r}: the budget is a "
                                 f"{type(budget).__name__}, not a Budget",
                                 where="the budget argument",
                                 fix="pass a placement.model.Budget (Budget() is unlimited)")
    try:
        check_assignment(present_state(state), state.assignment)
    except ValueError as exc:  # a state assembled without the model's own checks
        raise StrategyInputError(f"strategy {spec.name!r}: {exc}",
                                 where="the state's assignment",
                                 fix="build the state with ClusterState(...), which puts every "
                                     "unit on a known node or lists it as an arrival") from None
    unheld = [k for k in state.constraints.kinds if k not in spec.constraints]
    if unheld:
        able = ", ".join(n for n, s in sorted(_SPECS.items())
                         if set(state.constraints.kinds) <= set(s.constraints))
        raise StrategyInputError(
            f"strategy {spec.name!r} cannot hold the topology constraint(s) "
            f"{', '.join(unheld)}", where="the state's constraints (the job's [constraints])",
            fix=f"use a strategy that holds them ({able or 'none'}), or drop them from the job")
    # no edges is a valid communication facet (no traffic): only the others can be missing
    missing = sorted(set(spec.facets) - state.facets - {"arrivals", "communication"})
    if missing:
        raise StrategyInputError(
            f"strategy {spec.name!r} needs the {', '.join(missing)} facet(s), which the state "
            "lacks", where=f"the state's facets: {', '.join(sorted(state.facets))}",
            fix="give the job the statistics these facets come from (docs/algorithms.md, "
                "\"Facets\"), or choose a strategy that needs only what the state has")
    if state.arrivals and not spec.places_arrivals:
        shown = sorted(state.arrivals, key=natural_key)
        placers = ", ".join(n for n, s in sorted(_SPECS.items()) if s.places_arrivals)
        raise StrategyInputError(
            f"strategy {spec.name!r} does not place arrivals, and {len(shown)} unit(s) have "
            f"no node: {', '.join(shown[:5])}{' …' if len(shown) > 5 else ''}",
            where="the state's arrivals (units absent from its assignment)",
            fix="place them first, as the plan stage does (jobs/facets/dynamic.py: the least "
                f"utilised node), or use a strategy that places arrivals: {placers}")


def register(name: str, params: type[StrategyParams], fn: StrategyFn, *,
             guarantee: Literal["exact", "heuristic"], facets: tuple[str, ...] = (),
             keeps_budget: bool = True, places_arrivals: bool = False,
             objective: Objective = LOAD_DISTANCE, constraints: tuple[str, ...] = ()) -> Strategy:
    """Register `fn` under `name` (once) and return the checked wrapper."""
    if not name or not isinstance(name, str):
        raise ValueError(f"strategy name must be a non-empty string, got {name!r}")
    if name in _SPECS:
        raise ValueError(f"strategy {name!r} is already registered")
    spec = Spec(name, params, fn, guarantee, tuple(facets), keeps_budget, places_arrivals,
                objective, tuple(constraints))

    @functools.wraps(fn)
    def wrapper(state: ClusterState, budget: Budget, params: StrategyParams | None = None,
                **kwargs: Any) -> Plan:
        built = spec.params.of(params, kwargs, name)
        precheck(spec, state, budget)
        started = time.perf_counter()
        with watching(built.solver_budget()) as watch:
            plan = fn(canonical_state(state), budget, built)
        plan = dataclasses.replace(plan, strategy=name, wall_s=time.perf_counter() - started,
                                   determinism=describe(watch))
        check_plan(spec, state, budget, plan)
        plan = explain_constraints(state, explain_b(spec, state, budget, plan))
        return with_resilience(state, plan)  # F/F* and headroom, where there is a load model

    _SPECS[name], _WRAPPED[name] = spec, wrapper
    return wrapper


def get_spec(name: str) -> Spec:
    """The registered strategy `name`; ValueError listing the known names otherwise."""
    try:
        return _SPECS[name]
    except KeyError:
        raise ValueError(
            f"unknown strategy {name!r}; known: {', '.join(strategy_names())}") from None


def get_strategy(name: str) -> Strategy:
    """The checked callable of strategy `name` (see the module docstring)."""
    get_spec(name)
    return _WRAPPED[name]


def run_inner(name: str, state: ClusterState, budget: Budget, params: Mapping[str, Any]
              ) -> Plan:
    """Strategy `name`'s own function, unwrapped, with `params` as its params object: for a
    strategy that builds on another (ALBIC's plain MILP, drain_then_balance's balancer), whose
    own call the wrapper already checks, times and names. A family calls it through a
    function-level import: the registry imports the family's module while it registers it."""
    spec = get_spec(name)
    return spec.fn(state, budget, build_params(spec.params, params, name))


def build_strategy_params(name: str, params: Mapping[str, Any]) -> StrategyParams:
    """A job's `strategy_params` table as the strategy's params object; ValueError (a
    ParamsError) naming the field and the rule, before a plan runs."""
    spec = get_spec(name)
    for key in params:
        if key in PIPELINE_PARAMS:
            raise ParamsError(f"{key!r} is set by the job's {PIPELINE_PARAMS[key]!r}, not as a "
                              f"parameter of strategy {name!r}")
    return build_params(spec.params, params, name)


def check_params(name: str, params: Mapping[str, Any]) -> None:
    """ValueError if strategy `name` is unknown or `params` is not a valid table for it."""
    build_strategy_params(name, params)


def strategy_names() -> tuple[str, ...]:
    return tuple(sorted(_SPECS))


def _load(path: str) -> Any:
    module, _, attr = path.partition(":")
    return getattr(importlib.import_module(module), attr)


for _name, _entry in STRATEGIES.items():
    register(_name, _load(_entry.params), _load(_entry.plan), guarantee=_entry.guarantee,
             facets=_entry.facets, keeps_budget=_entry.keeps_budget,
             places_arrivals=_entry.places_arrivals, objective=_entry.objective,
             constraints=_entry.constraints)
