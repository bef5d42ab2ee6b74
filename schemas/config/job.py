"""One job's configuration, `[jobs.<id>]` of the config file, declared with pydantic.

Each field carries its rule (schemas/config/rules.py) the way a strategy's parameters carry
theirs (placement/params.py): a value that breaks it fails when the file loads, before any cycle
runs, with a message naming the file, the job, the field and the rule. The classes are frozen
pydantic dataclasses, so code builds them like any dataclass (`JobConfig("demo", spl=…)`,
`dataclasses.replace`) and every instance, from the file or from code, obeys the same rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import field, fields
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any

from pydantic import ConfigDict, PlainValidator, model_validator
from pydantic.dataclasses import dataclass
from pydantic_core import ArgsKwargs

import schemas.config.rules as rules
from schemas.config.rules import Rule, Scalar
from schemas.streams import LoadModelConfig, parse_load_model

__all__ = ["JobConfig", "ScalingConfig"]

_CONFIG = ConfigDict(extra="forbid", arbitrary_types_allowed=True)


def _keys(raw: object) -> Mapping[str, Any] | None:
    """The keyword fields being validated: a TOML table, or the keywords of a call from code."""
    if isinstance(raw, ArgsKwargs):
        return raw.kwargs or {}
    return raw if isinstance(raw, Mapping) else None


def _load_model(value: object) -> LoadModelConfig | None:
    if value is None or isinstance(value, LoadModelConfig):
        return value
    try:
        return parse_load_model(value)
    except ValueError as exc:
        raise Rule(str(exc)) from None


@dataclass(frozen=True, config=_CONFIG)
class ScalingConfig:
    """`[jobs.<id>.scaling]`: the scaling policy of Algorithm 1 (placement/scaling/policy.py).

    Scaling runs only for a job that has this table. `target_utilisation` is a fraction of a
    node's capacity in (0, 1]; `max_ld` is in percentage points of a reference node.
    """

    min_nodes: Annotated[int, PlainValidator(rules.whole)] = 1
    max_nodes: Annotated[int | None, PlainValidator(
        lambda v: None if v is None else rules.whole(v))] = None
    target_utilisation: Annotated[float, PlainValidator(rules.fraction)] = 0.8
    cooldown_cycles: Annotated[int, PlainValidator(rules.cycles)] = 3
    max_ld: Annotated[float, PlainValidator(rules.number)] = 10.0

    @model_validator(mode="before")
    @classmethod
    def _a_table_of_known_fields(cls, raw: Any) -> Any:
        keys = _keys(raw)
        if keys is None and not isinstance(raw, ScalingConfig):
            raise Rule(f"must be a table, got {raw!r}")
        known = {f.name for f in fields(ScalingConfig)}
        unknown = sorted(set(keys or {}) - known)
        if unknown:
            raise Rule(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return raw

    @model_validator(mode="after")
    def _bounds_in_order(self) -> ScalingConfig:
        if self.max_nodes is not None and self.max_nodes < max(1, self.min_nodes):
            raise Rule(f"min_nodes ({self.min_nodes}) must be <= max_nodes ({self.max_nodes}), "
                       "and max_nodes >= 1")
        return self


@dataclass(frozen=True, config=_CONFIG)
class JobConfig:
    """One job's reconfiguration settings; SPL is the statistics period length (paper §3)."""

    job_id: Annotated[str, PlainValidator(rules.job_id)]
    spl: Annotated[timedelta, PlainValidator(rules.duration)] = timedelta(minutes=5)
    strategy: Annotated[str, PlainValidator(rules.strategy)] = "milp"
    max_migrations: Annotated[int | None, PlainValidator(
        lambda v: None if v is None else rules.budget(v))] = 8
    max_migration_cost: Annotated[float | None, PlainValidator(
        lambda v: None if v is None else rules.number(v))] = None
    solver_time_limit_s: Annotated[float, PlainValidator(rules.positive)] = 10.0
    alpha: Annotated[float, PlainValidator(rules.number)] = 1e-6
    start_date: Annotated[datetime, PlainValidator(rules.start_date)] = datetime(
        2026, 1, 1, tzinfo=UTC)
    source: Annotated[Mapping[str, Any], PlainValidator(rules.table)] = field(
        default_factory=dict)
    scaling: ScalingConfig | None = None
    # "fixed": every key group present every period (the strict check); "dynamic": units (a
    # query platform's queries) arrive and leave between periods (DESIGN.md, "Units may come
    # and go"; docs/operations.md).
    units: Annotated[str, PlainValidator(rules.units)] = "fixed"
    # declared input streams, rate lower bounds and K: the load-model facet (schemas/streams.py)
    load_model: Annotated[LoadModelConfig | None, PlainValidator(_load_model)] = None
    # Per strategy name, keyword parameters of that strategy (e.g. albic: max_pl, s_f); only the
    # table of the strategy that runs is used, so a manual `--strategy` override stays valid.
    strategy_params: Annotated[Mapping[str, Mapping[str, Scalar]], PlainValidator(
        rules.strategy_params)] = field(default_factory=dict)
    # A wide-area job's topology file (placement/sprawl/topology.py: sites, links, pinned units,
    # queries), absolute or relative to the project; the plan stage loads and validates it.
    topology: Annotated[str | None, PlainValidator(
        lambda v: None if v is None else rules.topology(v))] = None
    # What-if (jobs/whatif/stage.py): the strategies that shadow-plan each published period's
    # state after publish. None ("auto") = every registered strategy whose facets the state
    # provides, decided at plan time; () = no shadows. Their params come from `strategy_params`.
    shadow_strategies: Annotated[tuple[str, ...] | None, PlainValidator(
        rules.shadow_strategies)] = None
    # Wall time all shadow plans of one period may take together; 0 turns shadows off.
    shadow_time_budget_s: Annotated[float, PlainValidator(rules.shadow_budget)] = 60.0
    # The DAG's catch-up policy (reconf/timetable.py): when several periods are due at once, only
    # the newest this many run; 0 = only periods that end from now on.
    catchup_periods: Annotated[int, PlainValidator(rules.catchup_periods)] = 1
    # How long after its period end a run waits for the landing's _SUCCESS (None: one SPL).
    landing_timeout: Annotated[timedelta | None, PlainValidator(rules.landing_timeout)] = None

    @model_validator(mode="before")
    @classmethod
    def _known_fields(cls, raw: Any) -> Any:
        keys = _keys(raw) or {}
        args = raw.args if isinstance(raw, ArgsKwargs) else ()
        rules.job_id(args[0] if args else keys.get("job_id"))  # the job's own where, no field
        known = {f.name for f in fields(JobConfig)} - {"job_id"}
        unknown = sorted(set(keys) - known - {"job_id"})
        if unknown:
            raise Rule(f"unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return raw

    @property
    def dynamic(self) -> bool:
        return self.units == "dynamic"

    @property
    def landing_wait(self) -> timedelta:
        """How long a run waits for its period to land, from the period end."""
        return self.landing_timeout if self.landing_timeout is not None else self.spl
