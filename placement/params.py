"""The strategy contract's parameters: one typed, frozen, self-validating object per strategy.

The MILP's parameters (paper §4.3.1, `MilpParams`) live here too, beside the shared ones: three
strategies of three families take them (the MILP, drain_then_balance, which hands them to its
balancer, and ALBIC's plain-MILP fallback), and no family imports another.

Each family's `params.py` extends `StrategyParams` and imports nothing but pydantic, so the
config loader (`schemas/config/`) checks a job's `strategy_params` when the file loads without
importing a solver. Three kinds of rule, in three places: per-field ranges and choices on the
fields (`Field(ge=…)`, `Literal`), rules across fields in a model validator (the MILP's
w1 > 2·w2), rules that need the `ClusterState` inside the strategy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from schemas.errors import ReconfError
from schemas.params import describe_errors, problems

__all__ = [
    "DEFAULT_LNS_STEPS",
    "DEFAULT_NODE_LIMIT",
    "DEFAULT_W1",
    "DEFAULT_W2",
    "DEFAULT_WB",
    "DEFAULT_WORK_LIMIT",
    "MilpParams",
    "ParamsError",
    "ResourceCaps",
    "Solver",
    "SolverBudget",
    "StrategyParams",
    "build_params",
    "describe_errors",
    "problems",
]

Solver = Literal["highs", "cbc"]

#: HiGHS mip_max_nodes and interrupt checkpoints of every MILP solve unless a job's
#: strategy_params say otherwise: calibrated so that the demo and benchmark jobs' plans are
#: about as good as under the clock limit (docs/algorithms.md, "Deterministic plans")
DEFAULT_NODE_LIMIT = 200
DEFAULT_WORK_LIMIT = 10


@dataclass(frozen=True)
class SolverBudget:
    """What every HiGHS solve of one call gets: its random_seed, mip_max_nodes and interrupt
    checkpoints (None: no such limit)."""

    seed: int = 0
    node_limit: int | None = DEFAULT_NODE_LIMIT
    work_limit: int | None = DEFAULT_WORK_LIMIT

    @property
    def budgeted(self) -> bool:
        return self.work_limit is not None or self.node_limit is not None


#: per resource r, caps[r] in units of a reference node's capacity (the MILP's (R))
ResourceCaps = Mapping[str, Annotated[float, Field(ge=0)]]
P = TypeVar("P", bound="StrategyParams")


class ParamsError(ReconfError, ValueError, TypeError):
    """A strategy parameter is unknown, mistyped or out of range (a ValueError and a TypeError,
    as a call with a wrong keyword is); the message names the strategy, the field and the rule."""


#: HiGHS takes its seed and its node limit as a C int; the work budget is counted against them
HIGHS_INT_MAX = 2**31 - 1


class StrategyParams(BaseModel):
    """Fields every strategy accepts: a strategy that has no use for one ignores it, so a sweep
    may pass `seed` or `time_limit_s` to every strategy alike."""

    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, allow_inf_nan=False)

    seed: int = Field(0, ge=0, le=HIGHS_INT_MAX,
                      description="seed of the strategy's random choices")
    time_limit_s: float = Field(
        10.0, gt=0, description="wall-clock limit of one plan, model building included; set by "
        "the job's solver_time_limit_s")
    solver: Solver = Field("highs", description="MILP solver: HiGHS or CBC (through PuLP)")
    node_limit: int | None = Field(
        DEFAULT_NODE_LIMIT, ge=1, le=HIGHS_INT_MAX, description="HiGHS mip_max_nodes of every MILP solve: with "
        "work_limit the deterministic work budget, so a plan stopped by it (not by the clock, "
        "which stays as the safety net) is reproducible (placement/determinism.py)")
    work_limit: int | None = Field(
        DEFAULT_WORK_LIMIT, ge=1, le=HIGHS_INT_MAX, description="HiGHS MIP interrupt checkpoints of every MILP "
        "solve (root cut rounds, heuristics, nodes): the deterministic budget of the work "
        "mip_max_nodes does not bound; with node_limit None too (from Python only) a plan runs "
        "on the clock, as the benchmarks' comparison does")

    def solver_budget(self) -> SolverBudget:
        """What every HiGHS solve of this call gets (placement/determinism.py)."""
        return SolverBudget(self.seed, self.node_limit, self.work_limit)

    #: True when the strategy weighs the load left on B by `w_b` (the MILP's objective), so
    #: Algorithm 1 may re-plan with draining weighted like d (placement/scaling/cycle.py)
    weighs_b: ClassVar[bool] = False

    @classmethod
    def of(cls: type[P], params: P | None, kwargs: Mapping[str, Any], strategy: str) -> P:
        """`params` as given, or built from keyword arguments (not both)."""
        if params is None:
            return build_params(cls, kwargs, strategy)
        if kwargs:
            raise ParamsError(f"strategy {strategy!r}: pass a params object or keywords, not "
                              f"both (got {sorted(kwargs)})")
        if not isinstance(params, cls):
            raise ParamsError(f"strategy {strategy!r}: params must be a {cls.__name__}, got "
                              f"{type(params).__name__}")
        return params


def build_params(cls: type[P], raw: Mapping[str, Any], strategy: str) -> P:
    """`cls` built from `raw`; ParamsError naming the strategy, each bad field and its rule."""
    try:
        return cls.model_validate(dict(raw))
    except ValidationError as exc:
        found = "; ".join(f"{field}: {rule}" for field, rule in describe_errors(cls, exc))
        raise ParamsError(f"strategy {strategy!r}: {found}") from None


DEFAULT_W1 = 1.0
DEFAULT_WB = 1e-4
DEFAULT_W2 = 1e-6
#: the neighbourhood search's budget of sub-MILPs on a work budget (placement/milp/lns.py):
#: none by default, since within the jobs' time limits it improved no plan's LD on the
#: benchmark sizes (docs/algorithms.md, "Deterministic plans"); a job with a long time limit
#: may give it some
DEFAULT_LNS_STEPS = 0


class MilpParams(StrategyParams):
    """min w1·d − w2·(d_u + d_l) + w_b·Σ_{n_i∈B} load_i with w1 ≫ w_b ≫ w2."""

    w1: float = Field(DEFAULT_W1, description="w1, weight of the load distance d")
    w2: float = Field(DEFAULT_W2, ge=0, description="w2, weight of the slacks d_u + d_l")
    w_b: float = Field(DEFAULT_WB, ge=0, description="w_b, weight of the load left on B")
    resource_caps: ResourceCaps | None = Field(
        None, description="caps[r] per resource, in reference-node units (constraint (R))")
    candidates: Literal["auto", "all"] = Field(
        "auto", description="'all': the full model; 'auto': LNS first above AUTO_MAX_VARS")
    gap_rel: float = Field(1e-6, ge=0, description="the solver's relative MIP gap")
    lns_steps: int = Field(
        DEFAULT_LNS_STEPS, ge=0, description="sub-MILPs of the neighbourhood search at most "
        "(models above AUTO_MAX_VARS x-variables): its deterministic work budget")

    weighs_b: ClassVar[bool] = True

    @model_validator(mode="after")
    def _w1_dominates(self) -> MilpParams:
        """d must dominate the slacks: with w1 ≤ 2·w2 widening both slacks pays for a worse d."""
        if not self.w1 > 2 * self.w2:
            raise ValueError(f"weights need w1 > 2·w2 (w1 ≫ w_b ≫ w2), got w1={self.w1}, "
                             f"w2={self.w2}")
        return self
