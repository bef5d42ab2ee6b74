"""Which routing policy sends each operator's input to its key groups (runtime/routing/).

An operator's key groups are the bins (virtual workers, in Nasir et al.'s words); H_1 is Flink's
key group of the key and H_2 the old PoTC alternate, so KG is exactly today's key grouping and PKG
(old name `potc`) chooses between the same two key groups. `routing` applies to the mergeable
operators (the others keep key grouping: their state cannot be split); `operator_routing` names
a policy per operator. Each stream is one source whose counts start at zero every period (a
period is self-contained, so a replay restarts from a checkpoint without router state). A policy
that splits keys leaves partial state on several key groups; it merges at window end into the
key's principal key group (`home`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

import numpy as np

from runtime.replay.dataflow import Dataflow, Layout
from runtime.routing import SPLITTING, KeyTable, canonical, check_epsilon, route

__all__ = ["OperatorRouting", "resolve_routing"]


def resolve_routing(flow: Dataflow, routing: str = "key",
                    operator_routing: Mapping[str, str] | None = None) -> dict[str, str]:
    """Operator -> canonical policy; ValueError on an unknown operator or policy, or on a
    splitting policy for an operator whose state cannot be merged."""
    default = canonical(routing)
    chosen = {op.name: default if op.mergeable else "kg" for op in flow.operators}
    names = [op.name for op in flow.operators]
    for name, policy in (operator_routing or {}).items():
        if name not in chosen:
            raise ValueError(f"operator_routing names operator {name!r}, which job "
                             f"{flow.name!r} does not have; its operators: {names}")
        pol = canonical(policy)
        if pol in SPLITTING and not flow.operator(name).mergeable:
            raise ValueError(f"operator {name!r} is not mergeable, so {pol!r} (which splits a "
                             "key over key groups) cannot route it; use 'kg' or 'ch'")
        chosen[name] = pol
    return chosen


class OperatorRouting:
    """Per operator: its policy, key table and the key group a split key merges into."""

    def __init__(self, flow: Dataflow, layout: Layout, routing: str = "key",
                 operator_routing: Mapping[str, str] | None = None, *,
                 epsilon: float = 0.01, seed: int = 1) -> None:
        self.policy = MappingProxyType(resolve_routing(flow, routing, operator_routing))
        self.epsilon = check_epsilon(epsilon)
        k = layout.kgs_per_operator
        self.tables = MappingProxyType({
            op.name: KeyTable.build(len(flow.keys[op.name]), k, seed=seed,
                                    first=layout.primary[op.name],
                                    second=layout.alternate[op.name])
            for op in flow.operators})

    def route(self, operator: str, keys: np.ndarray) -> np.ndarray:
        """Key groups (indices within the operator) of one period's rows, in row order."""
        policy, table = self.policy[operator], self.tables[operator]
        if policy == "kg":
            return table.first[keys]
        out, _ = route(policy, keys, table, epsilon=self.epsilon)
        return out

    def splits(self, operator: str) -> bool:
        return self.policy[operator] in SPLITTING

    def home(self, operator: str) -> np.ndarray:
        """Per key code, the key group its partial state merges into."""
        return self.tables[operator].principal(self.policy[operator])
