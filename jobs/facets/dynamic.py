"""plan, the facet part: sources, subscriptions and arrivals of a period (DESIGN.md, "Facets").

For a job whose units come and go (``units = "dynamic"``) the plan stage's `ClusterState` gains:
- sources (w(s) = `source_stats.tuples_per_s`, and bytes/s) and each unit's subscriptions;
- arrivals: the units of this period's stats that are not in the assignment the runtime ran (the
  current published version). The runtime put them somewhere provisional to run them; the plan
  places them, and that placement is not a migration. Units of that assignment that are not in
  the stats have left: they are not in the state, so they leave the next manifest.
  Before anything was published every unit is an arrival: no plan has placed any (unlike a fixed
  job's initial allocation, the runtime's provisional placement is no placement decision), so the
  first plan places the whole population, as Herding's online rule does from an empty system.

A strategy names the facets it needs (schemas/strategies.py); a job whose data lack them is
refused with a message. Placing arrivals is a capability (`places_arrivals` in that table): a
strategy without it gets a state whose arrivals are already placed, by `preplace_arrivals` (the least utilised node
that keeps the job's topology constraints, docs/algorithms.md), so every strategy runs on a dynamic
job.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeAlias

import pyarrow as pa

from jobs.errors import StageError
from jobs.facets.base import Assembly, KeygroupRows, unit_columns
from jobs.tracking.placements import PLACEMENTS_ARTIFACT, placements_csv
from placement.constraints import MoveCheck, amounts
from placement.facets import Source
from placement.herding.instance import from_state
from placement.herding.metrics import facet_metrics, node_of
from placement.metrics import plan_metrics
from placement.model import ClusterState, Plan
from placement.subscriptions import Subscriptions
from schemas.config import JobConfig
from schemas.strategies import STRATEGIES

__all__ = [
    "Prepared",
    "attach_sources",
    "check_strategy_facets",
    "prepare",
    "prepare_units",
    "preplace_arrivals",
    "with_facet_metrics",
    "with_sources",
]

#: facets a period may lack without the data being wrong: no traffic, or no query arrived
_MAY_BE_EMPTY = frozenset({"communication", "arrivals", "utilisation"})


#: a facet table as the lake gives it (Arrow columns) or as rows (tests, small callers)
FacetRows: TypeAlias = Sequence[Mapping[str, Any]] | pa.Table


def with_sources(state: ClusterState, job: JobConfig, kg_rows: KeygroupRows,
                 source_rows: FacetRows, subscription_rows: FacetRows,
                 current: Mapping[str, str], version: int | None) -> ClusterState:
    """`state` with the period's sources and subscriptions and, for a dynamic job, its arrivals
    (units not in `current`, the assignment of published `version` the runtime ran).

    Columnar: the subscription rows of the period's units are grouped into S_q by Arrow and
    numpy (placement/subscriptions.py `Subscriptions.from_pairs`), no set per unit; a source
    is one `Source` (sources are few: the paper's m ≪ n)."""
    import pyarrow.compute as pc

    unit_ids = (kg_rows["keygroup"].to_pylist() if isinstance(kg_rows, pa.Table)
                else [k["keygroup"] for k in kg_rows])
    subs = _columns(subscription_rows, {"keygroup": pa.string(), "source": pa.string()})
    keep = pc.is_in(subs["keygroup"], value_set=pa.array(unit_ids, pa.string()))
    subscriptions = Subscriptions.from_pairs(subs["keygroup"].filter(keep).to_numpy(),
                                             subs["source"].filter(keep).to_numpy())
    rates = _columns(source_rows, {"source": pa.string(), "tuples_per_s": pa.float64(),
                                   "bytes_per_s": pa.float64()}).sort_by("source")
    sources = tuple(Source(i, float(w), float(b)) for i, w, b in zip(
        *(rates[c].to_pylist() for c in ("source", "tuples_per_s", "bytes_per_s")), strict=True))
    if not job.dynamic:
        return replace(state, sources=sources, subscriptions=subscriptions)
    units = set(unit_ids)
    placed = {u: current[u] for u in sorted(units) if version is not None and u in current}
    return replace(state, assignment=placed, arrivals=frozenset(units - set(placed)),
                   sources=sources, subscriptions=subscriptions)


def _columns(rows: FacetRows, types: Mapping[str, pa.DataType]) -> pa.Table:
    """The named columns of a facet table, typed (rows are turned into columns once)."""
    if isinstance(rows, pa.Table):
        return pa.table({c: rows[c].cast(t) for c, t in types.items()})
    return pa.table({c: pa.array([r[c] for r in rows], t) for c, t in types.items()})


def check_strategy_facets(job: JobConfig, strategy: str, state: ClusterState) -> None:
    """Refuse a strategy whose required facets the period's data lack (a clear message)."""
    needed = set(STRATEGIES[strategy].facets) - _MAY_BE_EMPTY
    if state.streams:  # declared streams, load model not fitted yet: jobs/facets/load_model.py keeps
        needed.discard("load_model")  # the placement until it is (`keep_until_fitted`)
    missing = sorted(needed - state.facets)
    if missing:
        raise StageError(
            f"strategy {strategy!r} needs the {', '.join(missing)} facet(s), which the "
            f"statistics of job {job.job_id!r} do not provide",
            where=f"job {job.job_id!r}: strategy {strategy!r}",
            fix="give the job a strategy that fits its data, or a runtime that lands the facet "
                "(sources: a dynamic job's subscriptions and source rates, units = \"dynamic\"; "
                "see docs/operations.md)",
        )


def preplace_arrivals(state: ClusterState, strategy: str
                      ) -> tuple[ClusterState, dict[str, str]]:
    """For a strategy that does not place arrivals itself: each arrival, in id order, on the node
    of A with the least utilisation (Σ load / capacity) once it is there, ties by node id, among
    the nodes where it keeps every topology constraint of the job (placement/constraints.py;
    excluded nodes never take one). An arrival no node of A can take without breaking one is
    refused with the constraints it would break. The returned state has no arrivals; the
    second value is where each went."""
    if not state.arrivals or STRATEGIES[strategy].places_arrivals:
        return state, {}
    capacity = {n.id: n.capacity for n in state.nodes if not n.marked_for_removal}
    load = dict.fromkeys(capacity, 0.0)
    loads = {k.id: k.load for k in state.keygroups}
    for unit, node in state.assignment.items():
        if node in load:
            load[node] += loads[unit]
    check, excluded = MoveCheck(state), state.constraints.exclude_nodes
    assignment = dict(state.assignment)
    placed: dict[str, str] = {}
    for unit in sorted(state.arrivals):
        allowed = [n for n in capacity if n not in excluded and check.allows(assignment, unit, n)]
        if not allowed:
            raise _unplaceable(state, assignment, unit, sorted(capacity))
        node = min(allowed, key=lambda n: ((load[n] + loads[unit]) / capacity[n], n))
        load[node] += loads[unit]
        placed[unit] = assignment[unit] = node
    return replace(state, assignment={**state.assignment, **placed}, arrivals=frozenset()), placed


def _unplaceable(state: ClusterState, assignment: Mapping[str, str], unit: str,
                 nodes: list[str]) -> StageError:
    """The refusal of an arrival that every node of A would break a constraint for."""
    before = amounts(state, assignment)
    why = sorted({name for n in nodes for name, amount in amounts(
        state, {**assignment, unit: n}).items() if amount > before[name]}
        | ({"excluded nodes"} if set(nodes) <= state.constraints.exclude_nodes else set()))
    return StageError(
        f"arriving unit {unit!r} cannot be placed on any node without breaking the job's "
        f"constraint(s): {'; '.join(why)}",
        where=f"the period's arrivals ({len(state.arrivals)}), nodes {', '.join(nodes)}",
        fix="add nodes (or labels) that can take it, or loosen [constraints] in the job's "
            "config; the runtime keeps running it where it is until a plan places it")


def with_facet_metrics(plan: Plan, state: ClusterState, ran: Mapping[str, str], *,
                       runtime_before: bool = False) -> Plan:
    """The plan with the Herding metrics of a state with sources (placement/herding/metrics.py
    `facet_metrics`: stream_traffic, replication_factor, balance, load_balance,
    traffic_lower_bound) after (its assignment) and before (`ran`: where the runtime ran every
    unit of the period, arrivals included); a strategy's own values are kept, except its
    "before" when `runtime_before` (it saw the arrivals with no node: its "before" left them
    out, while the runtime ran them)."""
    if "sources" not in state.facets:
        return plan
    inst = from_state(state)
    after = facet_metrics(inst, node_of(inst, state, plan.assignment))
    before = facet_metrics(inst, node_of(inst, state, ran))
    return replace(plan, facet_metrics={**after, **plan.facet_metrics},
                   facet_before={**plan.facet_before, **before} if runtime_before
                   else {**before, **plan.facet_before})


@dataclass(frozen=True)
class Prepared:
    """A period's state made ready for `strategy`: `state` is what the strategy gets, `built`
    the state with its arrivals still unplaced, `ran` where the runtime ran every unit."""

    strategy: str
    state: ClusterState
    built: ClusterState
    ran: Mapping[str, str]
    preplaced: Mapping[str, str]

    def finish(self, plan: Plan, solved: ClusterState
               ) -> tuple[Plan, ClusterState, dict[str, str]]:
        """The plan with its facet metrics and message, the state to log it against (every
        unit where the runtime ran it, so "before" is the running system), and the extra
        artifacts of its MLflow run (placements.csv: where each placed or moved unit went, why).
        """
        arrived = bool(self.built.arrivals)
        plan = with_facet_metrics(plan, solved, self.ran, runtime_before=arrived)
        if self.preplaced:
            note = (f"{len(self.preplaced)} arriving unit(s) placed first on the least utilised "
                    f"node ({self.strategy} does not place arrivals)")
            plan = replace(plan, message=f"{plan.message}; {note}" if plan.message else note)
        if not self.built.arrivals:
            logged = solved
        else:
            logged = replace(solved, arrivals=frozenset(), assignment={
                **{u: self.ran[u] for u in self.built.arrivals}, **solved.assignment})
            # "before" is the running system: a strategy that placed the arrivals itself saw
            # them with no node (a first period read load distance 0 and traffic 0 before)
            plan = replace(plan, before=plan_metrics(logged, logged.assignment))
        rule = ("pre-placed on the least utilised node by capacity (docs/algorithms.md)"
                if self.preplaced else f"placed by {self.strategy}")
        text = placements_csv(self.built, plan, self.ran, rule)
        return plan, logged, ({} if text is None else {PLACEMENTS_ARTIFACT: text})


def attach_sources(assembly: Assembly, rows: tuple[FacetRows, FacetRows] | None) -> Assembly:
    """The registry's attach step: sources, subscriptions and arrivals, when the period has
    facet rows (`with_sources`)."""
    if rows is None:
        return assembly
    start = assembly.start
    return replace(assembly, state=with_sources(
        assembly.state, assembly.job, assembly.kg_rows, *rows,
        start.assignment, start.version))


def prepare(job: JobConfig, strategy: str, state: ClusterState,
            kg_rows: KeygroupRows) -> Prepared:
    """After every facet is attached: the strategy's facets checked, arrivals pre-placed for a
    strategy that does not place them."""
    check_strategy_facets(job, strategy, state)
    ready, preplaced = preplace_arrivals(state, strategy)
    units = unit_columns(kg_rows)
    return Prepared(strategy, ready, state, dict(zip(units["keygroup"], units["node"],
                                                     strict=True)), preplaced)


def prepare_units(job: JobConfig, strategy: str, state: ClusterState,
                  kg_rows: KeygroupRows,
                  facet_rows: tuple[FacetRows, FacetRows] | None,
                  current: Mapping[str, str], version: int | None) -> Prepared:
    """Sources, subscriptions and arrivals (when the period has facet rows), the strategy's
    facets checked, arrivals pre-placed for a strategy that does not place them."""
    if facet_rows is not None:
        state = with_sources(state, job, kg_rows, *facet_rows, current, version)
    return prepare(job, strategy, state, kg_rows)
