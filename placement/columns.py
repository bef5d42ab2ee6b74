"""A ClusterState's units and nodes as numpy arrays: what the vectorised metrics read.

Built once per state (`ClusterState.columns`), in the state's own order, so a sum over units in
array order adds the same floats in the same order as a loop over `state.keygroups`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from placement.comm import CommEdges

__all__ = ["Columns", "StateView"]


class StateView(Protocol):
    """What `Columns.of` reads of a ClusterState (placement/model.py), named by its shape so
    this module stays below the model it serves."""

    @property
    def keygroups(self) -> Sequence[Any]: ...
    @property
    def nodes(self) -> Sequence[Any]: ...
    @property
    def assignment(self) -> Mapping[str, str]: ...
    @property
    def comm(self) -> CommEdges: ...


@dataclass(frozen=True, eq=False)
class Columns:
    """A state's units and nodes as arrays, in the state's order: `load[i]` and
    `migration_cost[i]` of `units[i]`, `capacity[j]` and `marked[j]` of `nodes[j]`,
    `current[i]` the index of unit i's node (-1 for an arrival), `comm_unit[v]` the unit index
    of the communication vocabulary's v-th id."""

    units: tuple[str, ...]
    unit_index: Mapping[str, int]
    load: npt.NDArray[np.float64]
    migration_cost: npt.NDArray[np.float64]
    nodes: tuple[str, ...]
    node_index: Mapping[str, int]
    capacity: npt.NDArray[np.float64]
    marked: npt.NDArray[np.bool_]
    current: npt.NDArray[np.int64]
    comm_unit: npt.NDArray[np.int64]

    @classmethod
    def of(cls, state: StateView) -> Columns:
        units = tuple(k.id for k in state.keygroups)
        nodes = tuple(n.id for n in state.nodes)
        node_index = {n: j for j, n in enumerate(nodes)}
        n_units = len(units)
        current = np.fromiter((node_index.get(state.assignment.get(u, ""), -1) for u in units),
                              np.int64, n_units)
        return cls(
            units, {u: i for i, u in enumerate(units)},
            np.fromiter((k.load for k in state.keygroups), np.float64, n_units),
            np.fromiter((k.migration_cost for k in state.keygroups), np.float64, n_units),
            nodes, node_index,
            np.fromiter((n.capacity for n in state.nodes), np.float64, len(nodes)),
            np.fromiter((n.marked_for_removal for n in state.nodes), bool, len(nodes)),
            current, state.comm.codes_for(units))

    def node_codes(self, assignment: Mapping[str, str]) -> npt.NDArray[np.int64]:
        """The node index of every unit under `assignment` (-1 where it has none)."""
        index = self.node_index
        return np.fromiter((index.get(assignment.get(u, ""), -1) for u in self.units), np.int64,
                           len(self.units))
