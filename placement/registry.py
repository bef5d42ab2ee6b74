"""Strategies by name, so the pipeline, the CLI and the benchmarks pick them alike.

The names, where each strategy and its params class live, and what each promises are one table,
`schemas/strategies.py`; this module registers every line of it. A strategy is
`fn(state, budget, params) -> Plan` with `params` a frozen `StrategyParams` (placement/params.py).
The registered callable is a wrapper, the part every strategy shares (as Cruise Control's
AbstractGoal): it builds and validates the params (from a params object or keywords: an
unknown, mistyped or out-of-range one is a ParamsError before any solving), runs the strategy,
and checks the hard post-conditions: the assignment is complete, the budget is kept (unless the
strategy ignores it on purpose), nothing moves onto a node of B, and a heuristic never claims
OPTIMAL. When the state has the load-model facet, it adds the plan's resilience (feasible-set
ratio, headroom; placement/rod/resilience.py) to the plan's facet metrics, whatever the strategy.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from placement.common import fits
from placement.metrics import check_assignment
from placement.model import Budget, ClusterState, Plan, SolverStatus
from placement.params import ParamsError, StrategyParams, build_params
from placement.rod.resilience import with_resilience
from schemas.strategies import PIPELINE_PARAMS, STRATEGIES

__all__ = ["PIPELINE_PARAMS", "ParamsError", "PostConditionError", "Spec", "Strategy",
           "build_strategy_params", "check_params", "get_spec", "get_strategy", "register",
           "strategy_names"]

Strategy = Callable[..., Plan]


class PostConditionError(AssertionError):
    """A strategy returned a plan that breaks a hard constraint: a bug in the strategy."""


@dataclass(frozen=True)
class Spec:
    """One registered strategy: its params class, its function, what it promises."""

    name: str
    params: type[StrategyParams]
    fn: Callable[[ClusterState, Budget, Any], Plan]
    guarantee: Literal["exact", "heuristic"]
    facets: tuple[str, ...] = ()
    keeps_budget: bool = True


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
    if onto_b := sorted(m.keygroup for m in plan.moves if m.dst in marked):
        raise PostConditionError(f"{where}: moves {', '.join(onto_b)} onto a node of B")
    if spec.guarantee == "heuristic" and plan.status is SolverStatus.OPTIMAL:
        raise PostConditionError(f"{where}: a heuristic reported OPTIMAL")


def register(name: str, params: type[StrategyParams], fn: Callable[..., Plan], *,
             guarantee: Literal["exact", "heuristic"], facets: tuple[str, ...] = (),
             keeps_budget: bool = True) -> Strategy:
    """Register `fn` under `name` (once) and return the checked wrapper."""
    if not name or not isinstance(name, str):
        raise ValueError(f"strategy name must be a non-empty string, got {name!r}")
    if name in _SPECS:
        raise ValueError(f"strategy {name!r} is already registered")
    spec = Spec(name, params, fn, guarantee, tuple(facets), keeps_budget)

    @functools.wraps(fn)
    def wrapper(state: ClusterState, budget: Budget, params: StrategyParams | None = None,
                **kwargs: Any) -> Plan:
        plan = fn(state, budget, spec.params.of(params, kwargs, name))
        check_plan(spec, state, budget, plan)
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
             facets=_entry.facets, keeps_budget=_entry.keeps_budget)
