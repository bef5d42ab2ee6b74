"""Strategies registered by name, so the pipeline, the CLI and the benchmarks pick them alike.

A strategy is `fn(state, budget, **params) -> Plan`. The registry wraps it: parameters the
function declares are passed through; parameters in SHARED_PARAMS that it does not declare are
dropped (a caller may pass `seed` or `time_limit_s` to every strategy of a sweep); anything else
is a TypeError, so a typo never silently runs a default.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

from placement.baselines import plan_flux, plan_greedy, plan_random
from placement.milp import plan_milp
from placement.model import Budget, ClusterState, Plan

__all__ = ["SHARED_PARAMS", "Strategy", "get_strategy", "register", "strategy_names"]

Strategy = Callable[..., Plan]
SHARED_PARAMS = frozenset({"time_limit_s", "seed", "solver"})
_STRATEGIES: dict[str, Strategy] = {}


def register(name: str) -> Callable[[Strategy], Strategy]:
    """Decorator: register `fn` under `name` (a name can be registered once)."""
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
        return fn

    return deco


def get_strategy(name: str) -> Strategy:
    """The registered strategy `name`; ValueError listing the known names otherwise."""
    try:
        return _STRATEGIES[name]
    except KeyError:
        raise ValueError(
            f"unknown strategy {name!r}; known: {', '.join(strategy_names())}") from None


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
from placement.albic import plan_albic, plan_albic_many  # noqa: E402
from placement.baselines.cola import plan_cola  # noqa: E402

register("albic")(plan_albic)
register("albic_many")(plan_albic_many)
register("cola")(plan_cola)
