"""One job's configuration, `[jobs.<id>]` of the config file, declared with pydantic.

Each field carries its rule (schemas/config/rules.py) the way a strategy's parameters carry
theirs (placement/params.py): a value that breaks it fails when the file loads, before any cycle
runs, with a message naming the file, the job, the field and the rule. The classes are frozen
pydantic dataclasses, so code builds them like any dataclass (`JobConfig("demo", spl=…)`,
`dataclasses.replace`). The rules apply to a config file's tables (the loader validates with a
context naming the file); a job built in code (a benchmark, a test, a CLI override such as
`--max-migrations`) is taken as given, and the stage that uses a value checks it, with its own
message (the plan stage's budget range).

Each field's description is the docstring under it (pydantic's `use_attribute_docstrings`): the
generated configuration reference of the docs site (tools/docs_reference.py) shows it beside the
field's type, default and rule, and its test fails on a field without one.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import field, fields
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import ConfigDict, PlainValidator, ValidationInfo, model_validator
from pydantic.dataclasses import dataclass
from pydantic_core import ArgsKwargs

import schemas.config.rules as rules
from schemas.config.rules import Rule, Scalar
from schemas.constraints import Constraints, parse_constraints
from schemas.schedule import WaveLimits
from schemas.strategies import STRATEGIES
from schemas.streams import LoadModelConfig, parse_load_model

__all__ = ["ExecutionConfig", "HealingConfig", "JobConfig", "ScalingConfig", "StabilityConfig"]

_CONFIG = ConfigDict(extra="forbid", arbitrary_types_allowed=True, use_attribute_docstrings=True)


def _keys(raw: object) -> Mapping[str, Any] | None:
    """The keyword fields being validated: a TOML table, or the keywords of a call from code."""
    if isinstance(raw, ArgsKwargs):
        return raw.kwargs or {}
    return raw if isinstance(raw, Mapping) else None


def _checked(rule: Callable[..., Any], *, optional: bool = False) -> PlainValidator:
    """The field's rule, for a config file's table; from code, or None where `optional`, the value
    is taken as given."""
    with_info = "info" in inspect.signature(rule).parameters

    def validate(value: Any, info: ValidationInfo) -> Any:
        if info.context is None or (optional and value is None):
            return value
        return rule(value, info) if with_info else rule(value)

    validate.__doc__ = rule.__doc__  # what the rule accepts, for the configuration reference
    return PlainValidator(validate)


def _known_table(cls: type, raw: Any, info: ValidationInfo) -> Any:
    """A file's sub-table (`[jobs.<id>.scaling]`, `.execution`): a table, of known fields only."""
    if info.context is None or isinstance(raw, cls):
        return raw
    keys = _keys(raw)
    if keys is None:
        raise Rule(f"must be a table, got {raw!r}")
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(keys) - known)
    if unknown:
        raise Rule(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    return raw


def _load_model(value: object) -> LoadModelConfig | None:
    """A table of declared input streams that schemas/streams.py `parse_load_model` accepts."""
    if value is None or isinstance(value, LoadModelConfig):
        return value
    try:
        return parse_load_model(value)
    except ValueError as exc:
        raise Rule(str(exc)) from None


def _constraints(value: object) -> Constraints | None:
    """A table of labels and constraints that schemas/constraints.py `parse_constraints`
    accepts."""
    if value is None or isinstance(value, Constraints):
        return value
    try:
        return parse_constraints(value)
    except ValueError as exc:
        raise Rule(str(exc)) from None


@dataclass(frozen=True, config=_CONFIG)
class ScalingConfig:
    """`[jobs.<id>.scaling]`: the scaling policy of Algorithm 1 (placement/scaling/policy.py).

    Scaling runs only for a job that has this table (docs/algorithms.md, "Scaling").
    """

    min_nodes: Annotated[int, _checked(rules.whole)] = 1
    """The fewest nodes of A: at least max(1, `min_nodes`), never the last node."""
    max_nodes: Annotated[int | None, _checked(rules.whole, optional=True)] = None
    """The most nodes of A (a capped scale-out says so in its reason); unset: no cap."""
    target_utilisation: Annotated[float, _checked(rules.fraction)] = 0.8
    """The target load, a fraction of a node's capacity in (0, 1]: scale out when the planned
    allocation leaves a node above it and the total does not fit at it."""
    cooldown_cycles: Annotated[int, _checked(rules.cycles)] = 3
    """No decision opposite to one taken in the last this many cycles."""
    max_ld: Annotated[float, _checked(rules.number)] = 10.0
    """Scale in only if the remaining nodes can be balanced within this load distance, in
    percentage points of a reference node."""

    @model_validator(mode="before")
    @classmethod
    def _a_table_of_known_fields(cls, raw: Any, info: ValidationInfo) -> Any:
        return _known_table(cls, raw, info)

    @model_validator(mode="after")
    def _bounds_in_order(self, info: ValidationInfo) -> ScalingConfig:
        if (info.context is not None and self.max_nodes is not None
                and self.max_nodes < max(1, self.min_nodes)):
            raise Rule(f"min_nodes ({self.min_nodes}) must be <= max_nodes ({self.max_nodes}), "
                       "and max_nodes >= 1")
        return self


@dataclass(frozen=True, config=_CONFIG)
class StabilityConfig:
    """`[jobs.<id>.stability]`: stable plans (placement/stability.py).

    A drain of B or a broken topology constraint overrides the band and the cooldown.
    """

    band: Annotated[float | None, _checked(rules.number, optional=True)] = None
    """No moves while the load distance is at most this many percentage points (unset: off)."""
    cooldown_periods: Annotated[int, _checked(rules.cycles)] = 0
    """A unit that left a node in the last this many published periods is not moved back onto
    it (0: off)."""
    window_periods: Annotated[int, _checked(rules.cycles)] = 3
    """The periods the oscillation count (units moved back onto a node they left) covers."""

    @model_validator(mode="before")
    @classmethod
    def _a_table_of_known_fields(cls, raw: Any, info: ValidationInfo) -> Any:
        return _known_table(cls, raw, info)


@dataclass(frozen=True, config=_CONFIG)
class HealingConfig:
    """`[jobs.<id>.healing]`: out-of-schedule cycles for dead or far-over-capacity nodes
    (jobs/heal/, dags/healing.py; Cruise Control's self-healing). Off unless `enabled`.
    """

    enabled: Annotated[bool, _checked(rules.flag)] = False
    """Healing runs for this job (the DAG `heal_<job>`)."""
    budget: Annotated[int, _checked(rules.count)] = 8
    """The most units one healing moves, the dead nodes' units first (a healing whose dead units
    alone need more does nothing and alerts)."""
    min_gap: Annotated[timedelta, _checked(rules.duration)] = timedelta(minutes=10)
    """No healing publishes within this long of the previous one (a later report waits)."""
    max_nodes_at_once: Annotated[int, _checked(rules.count)] = 1
    """A report naming more nodes than this does nothing and alerts (Cruise Control's
    fixable-failure threshold)."""
    over_capacity_pct: Annotated[float, _checked(rules.over_capacity_pct)] = 150.0
    """A live node reported above this % of its capacity is healed too."""

    @model_validator(mode="before")
    @classmethod
    def _a_table_of_known_fields(cls, raw: Any, info: ValidationInfo) -> Any:
        return _known_table(cls, raw, info)


@dataclass(frozen=True, config=_CONFIG)
class ExecutionConfig:
    """`[jobs.<id>.execution]`: how the runtime applies a plan (placement/waves.py).

    The plan's moves go in ordered waves under the limits below. The defaults throttle only the
    per-node concurrency (5, as Cruise Control's `num.concurrent.partition.movements.per.broker`);
    a job sets a ceiling to have one.
    """

    max_moves_per_node: Annotated[int | None, _checked(rules.at_least_one, optional=True)] = 5
    """A node takes part in at most this many moves of one wave (as source or destination)."""
    max_moves_per_wave: Annotated[int | None, _checked(rules.at_least_one, optional=True)] = None
    """A wave holds at most this many moves (unset: no limit)."""
    max_bytes_per_wave: Annotated[float | None, _checked(rules.positive, optional=True)] = None
    """A wave moves at most this many state bytes (unset: no limit)."""
    ceiling_pct: Annotated[float | None, _checked(rules.ceiling_pct, optional=True)] = None
    """No wave may take a node over this % of its capacity (unset: no ceiling)."""
    max_bytes_per_second: Annotated[float | None, _checked(rules.positive, optional=True)] = None
    """Paces the waves: the runtime moves state no faster than this many bytes per second (each
    wave lasts at least its bytes / the rate; runtime/execution.py)."""

    @model_validator(mode="before")
    @classmethod
    def _a_table_of_known_fields(cls, raw: Any, info: ValidationInfo) -> Any:
        return _known_table(cls, raw, info)

    @property
    def limits(self) -> WaveLimits:
        """The wave planner's limits (schemas/schedule.py)."""
        return WaveLimits(self.max_moves_per_node, self.max_moves_per_wave,
                          self.max_bytes_per_wave, self.ceiling_pct, self.max_bytes_per_second)


@dataclass(frozen=True, config=_CONFIG)
class JobConfig:
    """One job's reconfiguration settings; SPL is the statistics period length (paper §3)."""

    job_id: Annotated[str, _checked(rules.job_id)]
    """The job's id: the name of its table `[jobs.<id>]` (never a key in it)."""
    spl: Annotated[timedelta, _checked(rules.duration)] = timedelta(minutes=5)
    """The statistics period, e.g. "5m": one cycle (one DAG run) per period end."""
    strategy: Annotated[str, _checked(rules.strategy)] = "milp"
    """The strategy that plans each period (schemas/strategies.py; `reconf plan --help`)."""
    max_migrations: Annotated[int | None, _checked(rules.budget, optional=True)] = 8
    """The per-cycle migration budget in moves (with or instead of `max_migration_cost`); 0:
    no migration this round."""
    max_migration_cost: Annotated[float | None, _checked(rules.number, optional=True)] = None
    """The per-cycle migration budget in migration cost (mc_k = alpha · |state_k|); 0: no
    migration this round."""
    solver_time_limit_s: Annotated[float, _checked(rules.solver_time_limit)] = 10.0
    """The solver time limit in seconds; for a MILP only a safety net: it stops on a
    deterministic work budget (`work_limit` / `node_limit`), docs/algorithms.md "Deterministic
    plans"."""
    alpha: Annotated[float, _checked(rules.number)] = 1e-6
    """Migration cost per state byte: mc_k = alpha · |state_k|."""
    start_date: Annotated[datetime, _checked(rules.start_date)] = datetime(
        2026, 1, 1, tzinfo=UTC)
    """The first schedulable period; the job's grid of period ends is start_date + k·SPL."""
    source: Annotated[Mapping[str, Any], _checked(rules.table)] = field(
        default_factory=dict)
    """The metrics source standing in for the runtime (`kind` = synthetic, replay, queries, …;
    config/jobs.toml and docs/runtime.md describe each kind's keys)."""
    scaling: ScalingConfig | None = None
    """The scaling policy, `[jobs.<id>.scaling]`; a job without the table never scales."""
    units: Annotated[str, _checked(rules.units)] = "fixed"
    """"fixed": every key group present every period (the strict check); "dynamic": units (a
    query platform's queries) arrive and leave between periods (DESIGN.md, "Units may come and
    go"; docs/operations.md)."""
    load_model: Annotated[LoadModelConfig | None, _checked(_load_model)] = None
    """Declared input streams, rate lower bounds and K: the load-model facet
    (schemas/streams.py; docs/operations.md, "Jobs with declared input streams")."""
    strategy_params: Annotated[Mapping[str, Mapping[str, Scalar]],
                               _checked(rules.strategy_params)] = field(default_factory=dict)
    """Per strategy name, keyword parameters of that strategy (e.g. albic: max_pl, s_f); only
    the table of the strategy that runs is used, so a manual `--strategy` override stays
    valid."""
    topology: Annotated[str | None, _checked(rules.topology, optional=True)] = None
    """A wide-area job's topology file (placement/sprawl/topology.py: sites, links, pinned
    units, queries), absolute or relative to the project; the plan stage loads and validates
    it."""
    shadow_strategies: Annotated[tuple[str, ...] | None, _checked(rules.shadow_strategies)] = None
    """What-if (jobs/whatif/stage.py): the strategies that shadow-plan each published period's
    state after publish. "auto" (or unset) = every registered strategy whose facets the state
    provides, decided at plan time; [] = no shadows. Their params come from
    `strategy_params`."""
    shadow_time_budget_s: Annotated[float, _checked(rules.shadow_budget)] = 60.0
    """Wall time all shadow plans of one period may take together; 0 turns shadows off."""
    catchup_periods: Annotated[int, _checked(rules.catchup_periods)] = 1
    """The DAG's catch-up policy (reconf/timetable.py): when several periods are due at once,
    only the newest this many run; 0 = only periods that end from now on."""
    landing_timeout: Annotated[timedelta | None, _checked(rules.landing_timeout)] = None
    """How long after its period end a run waits for the landing's _SUCCESS (unset: one
    SPL)."""
    execution: ExecutionConfig = field(default_factory=ExecutionConfig)
    """How the runtime applies a plan, `[jobs.<id>.execution]`: waves under per-node, per-wave
    and ceiling limits."""
    constraints: Annotated[Constraints | None, _checked(_constraints)] = None
    """Node labels and hard topology constraints, `[jobs.<id>.constraints]`
    (schemas/constraints.py; docs/operations.md, "Topology constraints"); the strategy must
    hold every kind declared (schemas/strategies.py `constraints`), or the file is refused."""
    stability: StabilityConfig | None = None
    """Stable plans, `[jobs.<id>.stability]`: the no-op band, the per-unit cooldown, the
    oscillation window."""
    approval: Annotated[bool, _checked(rules.flag)] = False
    """A human approves each plan between plan and publish (Airflow's human-in-the-loop
    ApprovalOperator, dags/reconfigure.py; docs/operations.md, "Approval")."""
    approval_timeout: Annotated[timedelta, _checked(rules.approval_timeout)] = timedelta(hours=1)
    """Without an answer within this long the plan is rejected as "timed out" and nothing is
    published."""
    healing: HealingConfig = field(default_factory=HealingConfig)
    """Healing between periods, `[jobs.<id>.healing]`: dead or far-over-capacity nodes
    re-placed out of schedule."""

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, raw: Any, info: ValidationInfo) -> Any:
        if info.context is None:
            return raw
        keys = _keys(raw) or {}
        rules.job_id(keys.get("job_id"))  # the job's own where, no field
        known = {f.name for f in fields(JobConfig)} - {"job_id"}
        # the job id is the table's name: a `job_id` key in the table is unknown
        given = set(info.context["table"])
        unknown = sorted(given - known)
        if unknown:
            raise Rule(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return raw

    @model_validator(mode="after")
    def _strategy_holds_constraints(self, info: ValidationInfo) -> JobConfig:
        if info.context is not None and self.constraints:
            held = STRATEGIES[self.strategy].constraints
            missing = [k for k in self.constraints.kinds if k not in held]
            if missing:
                able = sorted(n for n, e in STRATEGIES.items()
                              if set(self.constraints.kinds) <= set(e.constraints))
                raise Rule(f"strategy {self.strategy!r} cannot hold the constraint(s) "
                           f"{', '.join(missing)} of [constraints]; strategies that hold every "
                           f"declared kind: {', '.join(able) or 'none'}", "strategy")
        return self

    @property
    def dynamic(self) -> bool:
        return self.units == "dynamic"

    @property
    def landing_wait(self) -> timedelta:
        """How long a run waits for its period to land, from the period end."""
        return self.landing_timeout if self.landing_timeout is not None else self.spl
