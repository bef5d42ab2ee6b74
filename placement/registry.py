"""Strategies registered by name, so the pipeline, the CLI and the benchmarks pick them alike.

A strategy is `fn(state, budget, **params) -> Plan`. The registry wraps it: parameters the
function declares are passed through; parameters in SHARED_PARAMS that it does not declare are
dropped (a caller may pass `seed` or `time_limit_s` to every strategy of a sweep); anything else
is a TypeError, so a typo never silently runs a default.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from placement.baselines import plan_flux, plan_greedy, plan_random
from placement.milp import plan_milp
from placement.model import Budget, ClusterState, Plan

__all__ = ["SHARED_PARAMS", "Strategy", "check_params", "get_strategy", "register", "strategy_names"]

Strategy = Callable[..., Plan]
SHARED_PARAMS = frozenset({"time_limit_s", "seed", "solver"})
_STRATEGIES: dict[str, Strategy] = {}
_PARAMS: dict[str, frozenset[str] | None] = {}  # None: accepts any keyword
_CHECKS: dict[str, Callable[..., None]] = {}
# Set by the pipeline from the job's own fields, never through a strategy's parameter table.
_PIPELINE_PARAMS = {"time_limit_s": "solver_time_limit_s"}


def register(name: str, check: Callable[..., None] | None = None
             ) -> Callable[[Strategy], Strategy]:
    """Decorator: register `fn` under `name` (a name can be registered once).

    `check(**params)` raises ValueError for out-of-range parameter values before any solving.
    """
    if not name or not isinstance(name, str):
        raise ValueError(f"strategy name must be a non-empty string, got {name!r}")

    def deco(fn: Strategy) -> Strategy:
        if name in _STRATEGIES:
            raise ValueError(f"strategy {name!r} is already registered")
        params = inspect.signature(fn).parameters
        accepts_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        known = {p for p in params if p not in ("state", "budget")}

        @functools.wraps(fn)
        def wrapper(state: ClusterState, budget: Budget, **kwargs: Any) -> Plan:
            passed = {}
            for key, value in kwargs.items():
                if accepts_any or key in known:
                    passed[key] = value
                elif key not in SHARED_PARAMS:
                    raise TypeError(
                        f"strategy {name!r} does not accept parameter {key!r}; it accepts "
                        f"{sorted(known) or 'none'} (and ignores {sorted(SHARED_PARAMS)})")
            return fn(state, budget, **passed)

        _STRATEGIES[name] = wrapper
        _PARAMS[name] = None if accepts_any else frozenset(known)
        if check is not None:
            _CHECKS[name] = check
        return fn

    return deco


def get_strategy(name: str) -> Strategy:
    """The registered strategy `name`; ValueError listing the known names otherwise."""
    try:
        return _STRATEGIES[name]
    except KeyError:
        raise ValueError(
            f"unknown strategy {name!r}; known: {', '.join(strategy_names())}") from None


def check_params(name: str, params: Mapping[str, Any]) -> None:
    """ValueError if strategy `name` is unknown, does not take a parameter, or a value is out of
    range: what a job's `strategy_params` table is checked with before a plan runs."""
    get_strategy(name)
    for key in params:
        if key in _PIPELINE_PARAMS:
            raise ValueError(f"{key!r} is set by the job's {_PIPELINE_PARAMS[key]!r}, not as a "
                             f"parameter of strategy {name!r}")
    known = _PARAMS[name]
    if known is not None and (unknown := sorted(set(params) - known)):
        takes = sorted(known - set(_PIPELINE_PARAMS))
        raise ValueError(f"strategy {name!r} has no parameter(s) {', '.join(unknown)}; it "
                         f"takes {', '.join(takes) or 'none'}")
    if name in _CHECKS:
        _CHECKS[name](**params)


def strategy_names() -> tuple[str, ...]:
    return tuple(sorted(_STRATEGIES))


register("milp")(plan_milp)
register("flux")(plan_flux)
register("greedy")(plan_greedy)
register("random")(plan_random)

# The non-integrated scale-in of paper §5.1 (drain B evenly, then balance), issue 3.
from placement.baselines.scale_in import plan_drain_then_balance  # noqa: E402

register("drain_then_balance")(plan_drain_then_balance)

# Collocation (paper §4.3.2) and its baseline COLA (issue 4).
from placement.albic import check_albic_params, plan_albic, plan_albic_many  # noqa: E402
from placement.baselines.cola import check_cola_params, plan_cola  # noqa: E402

register("albic", check=check_albic_params)(plan_albic)
register("albic_many", check=check_albic_params)(plan_albic_many)
register("cola", check=check_cola_params)(plan_cola)
