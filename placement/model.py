"""The planner's in-memory cluster model (DESIGN.md, "The planner's model").

One model serves every strategy, like Cruise Control's ClusterModel: a strategy reads a
`ClusterState`, proposes a `Plan`, and never touches the running job.

Units: a key group's `load` is its bottleneck-resource use in % of a reference node over the
statistics period (paper §4.3.1 gLoad_k); a node's `capacity` is its weight relative to that
reference node (1.0 = reference), so node utilisation is sum(load) / capacity.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from placement.comm import CommEdges, Edge
from placement.facets import Network, Source, Stream, check_facets
from placement.subscriptions import Subscriptions
from schemas.constraints import Constraints

if TYPE_CHECKING:
    from placement.columns import Columns

__all__ = [
    "Budget",
    "ClusterState",
    "Edge",
    "KeyGroup",
    "Move",
    "Node",
    "Phase",
    "Plan",
    "PlanMetrics",
    "ScalingActions",
    "SolverStatus",
]


def _check_finite_non_negative(value: float, what: str) -> None:
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"{what} must be a finite number >= 0, got {value!r}")


@dataclass(frozen=True)
class Node:
    """A processing node n_i. Nodes with `marked_for_removal` form the paper's set B.

    `labels`: (key, value) pairs such as ("zone", "a"), ("rack", "r1"): the failure domains the
    job's topology constraints speak of (schemas/constraints.py); a pair tuple keeps nodes
    hashable."""

    id: str
    capacity: float = 1.0
    marked_for_removal: bool = False
    labels: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"node id must be a non-empty string, got {self.id!r}")
        if not math.isfinite(self.capacity) or self.capacity <= 0:
            raise ValueError(
                f"node {self.id!r}: capacity weight must be a finite number > 0, "
                f"got {self.capacity!r}"
            )


@dataclass(frozen=True)
class KeyGroup:
    """A key group g_k: gLoad_k (`load`), its state |sigma_k| and its migration cost mc_k.

    `loads` optionally carries a multi-dimensional load (e.g. {"cpu": .., "mem": ..}); `load`
    is always the bottleneck-resource value that the balancer equalises.
    """

    id: str
    operator: str
    load: float
    state_bytes: float = 0.0
    migration_cost: float = 0.0
    loads: Mapping[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError(f"key group id must be a non-empty string, got {self.id!r}")
        _check_finite_non_negative(self.load, f"key group {self.id!r}: load")
        _check_finite_non_negative(self.state_bytes, f"key group {self.id!r}: state_bytes")
        _check_finite_non_negative(self.migration_cost, f"key group {self.id!r}: migration_cost")
        for resource, value in self.loads.items():
            _check_finite_non_negative(value, f"key group {self.id!r}: load[{resource!r}]")


@dataclass(frozen=True)
class Budget:
    """The per-invocation migration budget: maxMigrCost (cost) or a number of migrations.

    Either bound may be None (unbounded); both may be set, and both are then respected.
    """

    max_migration_cost: float | None = None
    max_migrations: int | None = None

    def __post_init__(self) -> None:
        if self.max_migration_cost is not None and (
            not math.isfinite(self.max_migration_cost) or self.max_migration_cost < 0
        ):
            raise ValueError(
                f"budget: max_migration_cost must be a finite number >= 0, "
                f"got {self.max_migration_cost!r}"
            )
        if self.max_migrations is not None and (
            isinstance(self.max_migrations, bool) or not isinstance(self.max_migrations, int)
        ):
            raise ValueError(
                f"budget: max_migrations must be an integer >= 0, got {self.max_migrations!r}"
            )
        if self.max_migrations is not None and self.max_migrations < 0:
            raise ValueError(
                f"budget: max_migrations must be >= 0, got {self.max_migrations!r}"
            )


@dataclass(frozen=True)
class ClusterState:
    """Nodes N = A ∪ B, key groups G, the current allocation q (key group -> node), and out().

    The other fields are the optional facets (placement/facets.py), empty unless a job's data
    provides them. `arrivals` are units that have no current node yet (a dynamic unit set: a
    query platform's new queries); they are absent from `assignment`, and placing one is not a
    migration.
    """

    nodes: tuple[Node, ...]
    keygroups: tuple[KeyGroup, ...]
    assignment: Mapping[str, str]
    #: out(g_i, g_j): given as Edge objects or as columns; always held as `CommEdges`
    #: (placement/comm.py), a read-only Sequence[Edge] whose columns the hot paths read
    edges: Sequence[Edge] = ()
    sources: tuple[Source, ...] = ()
    #: S_q: given as any mapping; always held as `Subscriptions` (placement/subscriptions.py),
    #: a read-only Mapping[str, frozenset[str]] whose CSR arrays the hot paths read
    subscriptions: Mapping[str, frozenset[str]] = field(default_factory=dict)
    streams: tuple[Stream, ...] = ()
    load_model: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    network: Network | None = None
    pinned: Mapping[str, str] = field(default_factory=dict)
    arrivals: frozenset[str] = frozenset()
    #: the job's topology constraints (schemas/constraints.py); every plan keeps them or
    #: breaks none more than the current assignment does (placement/constraints.py)
    constraints: Constraints = field(default_factory=Constraints)

    def __post_init__(self) -> None:
        if not self.nodes:
            raise ValueError("cluster state: there must be at least one node")
        node_ids = [n.id for n in self.nodes]
        if len(set(node_ids)) != len(node_ids):
            raise ValueError("cluster state: node ids must be unique")
        if all(n.marked_for_removal for n in self.nodes):
            raise ValueError(
                "cluster state: every node is marked for removal; at least one must stay (set A)"
            )
        kg_ids = [k.id for k in self.keygroups]
        if len(set(kg_ids)) != len(kg_ids):
            raise ValueError("cluster state: key group ids must be unique")
        known_nodes = set(node_ids)
        known_kgs = set(kg_ids)
        # set arithmetic first (C speed at 10^5 units); the loops below only name the culprit
        placed = self.assignment.keys()
        if not (known_kgs <= (placed | self.arrivals) and self.arrivals <= known_kgs
                and not (self.arrivals & placed) and placed <= known_kgs
                and set(self.assignment.values()) <= known_nodes):
            self._refuse_units(kg_ids, known_kgs, known_nodes)
        if not isinstance(self.edges, CommEdges):
            object.__setattr__(self, "edges", CommEdges.of(self.edges))
        if not isinstance(self.subscriptions, Subscriptions):  # S_q as CSR, like out()
            object.__setattr__(self, "subscriptions", Subscriptions.of(self.subscriptions))
        unknown = self.comm.unknown_end(known_kgs)
        if unknown is not None:
            at, end = unknown
            if at < 0:
                raise ValueError(f"cluster state: dropped pairs of unknown key group {end!r}")
            e = self.comm[at]
            raise ValueError(
                f"cluster state: edge {e.src!r}->{e.dst!r} names unknown key group {end!r}"
            )
        check_facets(
            units=known_kgs,
            nodes=known_nodes,
            sources=self.sources,
            subscriptions=self.subscriptions,
            streams=self.streams,
            load_model=self.load_model,
            network=self.network,
            pinned=self.pinned,
        )

    def _refuse_units(self, kg_ids: list[str], known_kgs: set[str], known_nodes: set[str]
                      ) -> None:
        """Name the first unit without a node, arrival or assignment entry the model cannot
        hold (in the order the checks have always run)."""
        for kg in kg_ids:
            if kg not in self.assignment and kg not in self.arrivals:
                raise ValueError(f"cluster state: key group {kg!r} has no current node")
        for kg in self.arrivals:
            if kg not in known_kgs:
                raise ValueError(f"cluster state: arrival {kg!r} is not a key group")
            if kg in self.assignment:
                raise ValueError(f"cluster state: arrival {kg!r} already has a current node")
        for kg, node in self.assignment.items():
            if kg not in known_kgs:
                raise ValueError(f"cluster state: assignment names unknown key group {kg!r}")
            if node not in known_nodes:
                raise ValueError(
                    f"cluster state: key group {kg!r} is on unknown node {node!r}"
                )

    @property
    def comm(self) -> CommEdges:
        """out() as columns (placement/comm.py)."""
        edges = self.edges  # a CommEdges since __post_init__, unless set around it
        return edges if isinstance(edges, CommEdges) else CommEdges.of(edges)

    @functools.cached_property
    def columns(self) -> Columns:
        """Units, nodes and the current allocation as arrays (computed once per state)."""
        from placement.columns import Columns

        return Columns.of(self)

    @property
    def facets(self) -> frozenset[str]:
        """The facets this state provides (placement.facets.FACET_NAMES); "utilisation" is
        always there (node capacities and the units' loads)."""
        present = {"utilisation"}
        if self.edges or self.comm.has_dropped:
            present.add("communication")
        if self.sources and self.subscriptions:
            present.add("sources")
        if self.streams and self.load_model:
            present.add("load_model")
        if self.network is not None:
            present.add("network")
        if self.arrivals:
            present.add("arrivals")
        return frozenset(present)

    @property
    def node_ids(self) -> tuple[str, ...]:
        return tuple(n.id for n in self.nodes)

    def node(self, node_id: str) -> Node:
        for n in self.nodes:
            if n.id == node_id:
                return n
        raise KeyError(node_id)

    def keygroup(self, kg_id: str) -> KeyGroup:
        for k in self.keygroups:
            if k.id == kg_id:
                return k
        raise KeyError(kg_id)


class SolverStatus(str, Enum):  # noqa: UP042 (str() kept as jobs/ expect)
    OPTIMAL = "optimal"
    TIME_LIMITED = "time_limited"  # best incumbent, unproven: a work budget or the clock stopped
    INFEASIBLE = "infeasible"  # current assignment kept
    HEURISTIC = "heuristic"  # a baseline: no optimality claim


@dataclass(frozen=True)
class Move:
    keygroup: str
    src: str
    dst: str
    cost: float


@dataclass(frozen=True)
class ScalingActions:
    nodes_to_add: tuple[str, ...] = ()
    nodes_to_mark: tuple[str, ...] = ()
    nodes_to_terminate: tuple[str, ...] = ()
    reason: str = ""


@dataclass(frozen=True)
class PlanMetrics:
    load_distance: float
    max_node_load: float
    min_node_load: float
    collocation_factor: float


@dataclass(frozen=True)
class Phase:
    """One timed step of a solver (a warm start, a model build, a solve): its name, the seconds
    it took, and how it ended ("optimal", "time_limit", "12 sub-MILPs, 3 improved"; "" when it
    has nothing to report). A plan's phases are data, so a reader never parses its message."""

    name: str
    seconds: float
    outcome: str = ""


@dataclass(frozen=True)
class Plan:
    """A strategy's proposal. `strategy` and `wall_s` are the registry's: its wrapper names the
    plan after the registered strategy and times the call (placement/registry.py)."""

    strategy: str
    assignment: Mapping[str, str]
    moves: tuple[Move, ...]
    before: PlanMetrics
    after: PlanMetrics
    status: SolverStatus
    lower_bound: float | None
    wall_s: float
    scaling: ScalingActions = ScalingActions()
    message: str = ""
    #: metrics of the new assignment that only some facets define, by name (e.g. a herding
    #: plan's "stream_traffic" and "replication_factor", a plan's "feasible_set_ratio"); the
    #: pipeline logs each to MLflow as `<name>_after` (and `<name>_before` from `facet_before`)
    facet_metrics: Mapping[str, float] = field(default_factory=dict)
    facet_before: Mapping[str, float] = field(default_factory=dict)
    #: the solver's timed steps, in order (the MILP: warm start, neighbourhood search, model
    #: build, transfer to the solver, solve); () for a strategy that has none worth timing
    phases: tuple[Phase, ...] = ()
    #: what makes the plan reproducible, or the step a clock cut (placement/determinism.py);
    #: the registry writes it
    determinism: str = ""

    def phase(self, name: str) -> Phase | None:
        """The first phase called `name`, None if the plan has none."""
        return next((p for p in self.phases if p.name == name), None)

    @property
    def migrations(self) -> int:
        return len(self.moves)

    @property
    def migration_cost(self) -> float:
        return sum(m.cost for m in self.moves)

    def to_dict(self) -> dict[str, Any]:
        """The plan as JSON-ready data: the plan row's `plan_json` and the what-if's records."""
        return {
            "strategy": self.strategy,
            "status": self.status.value,
            "lower_bound": self.lower_bound,
            "wall_s": self.wall_s,
            "message": self.message,
            "before": asdict(self.before),
            "after": asdict(self.after),
            "migrations": self.migrations,
            "migration_cost": self.migration_cost,
            "moves": [asdict(m) for m in self.moves],
            "scaling": asdict(self.scaling),
            "phases": [asdict(p) for p in self.phases],
            "determinism": self.determinism,
            "assignment": dict(sorted(self.assignment.items())),
        }


def moves_between(
    state: ClusterState, new_assignment: Mapping[str, str]
) -> tuple[Move, ...]:
    """The moves that turn the current allocation into `new_assignment`, sorted by key group.

    Placing an arrival (a unit with no current node) is not a move."""
    costs = {k.id: k.migration_cost for k in state.keygroups}
    return tuple(
        Move(kg, state.assignment[kg], new_assignment[kg], costs[kg])
        for kg in sorted(new_assignment)
        if kg in state.assignment and new_assignment[kg] != state.assignment[kg]
    )
