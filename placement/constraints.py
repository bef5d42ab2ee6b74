"""A plan checked against the job's topology constraints (schemas/constraints.py).

Each constraint has a violation *amount* for an assignment, 0 when it holds:

- spread, `max_per_domain` M: Σ_z max(0, |G ∩ z| − M) over the label's values z;
- spread, `min_domains` Z: max(0, min(Z, |G|) − |{z : G ∩ z ≠ ∅}|) — a group smaller than Z
  holds it by having every unit in its own domain; a node without the label is in no domain;
- anti-affinity of S: Σ_i max(0, |S on n_i| − 1);
- pin of P to labels L: |{u ∈ P : L ⊄ labels(node(u))}|;
- max units per node M: Σ_i max(0, |units on n_i| − M);
- excluded nodes E: units that the assignment puts on a node of E other than their current one.

A unit without a node (an arrival, in the current assignment) counts for no constraint.

Units a constraint names that the state lacks (a dynamic job's units come and go) are ignored.
A strategy that holds a constraint never raises its amount above the current assignment's: a
plan keeps every constraint the current assignment keeps, and breaks those it already breaks
by no more (a budget may not cover the repair). The registry's post-check holds every plan to
that (`raised`); `MoveCheck` lets a move-by-move heuristic (greedy) ask before each move.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

from placement.model import ClusterState
from schemas.constraints import AntiAffinity, Constraints, Pin, Spread

__all__ = ["MoveCheck", "amounts", "broken", "held", "raised"]


@dataclass(frozen=True)
class _Rule:
    """One constraint as the checker sees it: its name, kind, the units it involves (None:
    every unit) and the constraint itself."""

    name: str
    kind: str
    units: frozenset[str] | None
    spec: Spread | AntiAffinity | Pin | int | frozenset[str]


def _rules(state: ClusterState, cons: Constraints) -> list[_Rule]:
    present = {k.id for k in state.keygroups}
    out: list[_Rule] = []
    for s in cons.spread:
        group = ({k.id for k in state.keygroups if k.operator == s.operator} if s.operator
                 else set(s.units) & present)
        out.append(_Rule(s.name, "spread", frozenset(group), s))
    for a in cons.anti_affinity:
        out.append(_Rule(a.name, "anti_affinity", frozenset(a.units) & present, a))
    for p in cons.pin:
        out.append(_Rule(p.name, "pin", frozenset(p.units) & present, p))
    if cons.max_units_per_node is not None:
        out.append(_Rule(f"at most {cons.max_units_per_node} units per node",
                         "max_units_per_node", None, cons.max_units_per_node))
    if cons.exclude_nodes:
        out.append(_Rule(f"no unit onto excluded node(s) {sorted(cons.exclude_nodes)}",
                         "exclude_nodes", None, cons.exclude_nodes))
    return out


def _label(state: ClusterState, node: str, key: str) -> str | None:
    return dict(state.node(node).labels).get(key)


def _amount(state: ClusterState, rule: _Rule, assignment: Mapping[str, str]) -> int:
    spec = rule.spec
    if isinstance(spec, Spread):
        units = [u for u in rule.units or () if u in assignment]
        by_domain = Counter(_label(state, assignment[u], spec.label) for u in units)
        by_domain.pop(None, None)
        amount = 0
        if spec.max_per_domain is not None:
            amount += sum(max(0, c - spec.max_per_domain) for c in by_domain.values())
        if spec.min_domains is not None:
            amount += max(0, min(spec.min_domains, len(units)) - len(by_domain))
        return amount
    if isinstance(spec, AntiAffinity):
        return sum(c - 1 for c in Counter(assignment[u] for u in rule.units or ()
                                          if u in assignment).values())
    if isinstance(spec, Pin):
        return sum(1 for u in rule.units or () if u in assignment
                   if any(_label(state, assignment[u], k) != v for k, v in spec.labels.items()))
    if isinstance(spec, int):
        return sum(max(0, c - spec) for c in Counter(assignment.values()).values())
    return sum(1 for u, n in assignment.items()
               if n in spec and state.assignment.get(u) != n)


def amounts(state: ClusterState, assignment: Mapping[str, str]) -> dict[str, int]:
    """Each constraint of the state's set by name, and its violation amount (0: kept)."""
    if not state.constraints:
        return {}
    return {r.name: _amount(state, r, assignment) for r in _rules(state, state.constraints)}


def broken(state: ClusterState, assignment: Mapping[str, str]) -> list[str]:
    """The names of the constraints `assignment` breaks, in declaration order."""
    return [name for name, amount in amounts(state, assignment).items() if amount > 0]


def raised(state: ClusterState, assignment: Mapping[str, str]) -> list[str]:
    """The constraints `assignment` breaks more than the current assignment does: what no
    plan of a strategy that holds them may do (the registry's post-check)."""
    before = amounts(state, state.assignment)
    return [name for name, amount in amounts(state, assignment).items()
            if amount > before[name]]


class _Moved(Mapping[str, str]):
    """`base` with one unit on another node, without copying `base`."""

    def __init__(self, base: Mapping[str, str], unit: str, node: str) -> None:
        self._base, self._unit, self._node = base, unit, node

    def __getitem__(self, key: str) -> str:
        return self._node if key == self._unit else self._base[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._base)

    def __len__(self) -> int:
        return len(self._base)


class MoveCheck:
    """Asks, before a move, whether it raises any constraint's violation amount: only the
    constraints that involve the moving unit (or every unit) are evaluated."""

    def __init__(self, state: ClusterState) -> None:
        self.state = state
        self.rules = _rules(state, state.constraints) if state.constraints else []
        self.active = bool(self.rules)

    def _touching(self, unit: str) -> Iterator[_Rule]:
        return (r for r in self.rules if r.units is None or unit in r.units)

    def allows(self, assignment: Mapping[str, str], unit: str, dst: str) -> bool:
        """True if moving `unit` to `dst` raises no constraint's amount."""
        if not self.active:
            return True
        after = _Moved(assignment, unit, dst)
        for rule in self._touching(unit):
            if isinstance(rule.spec, int):  # per-node maximum: only dst's count rises
                if sum(1 for n in assignment.values() if n == dst) + 1 > rule.spec:
                    return False
            elif _amount(self.state, rule, after) > _amount(self.state, rule, assignment):
                return False
        return True

    def blocking(self, assignment: Mapping[str, str], unit: str, dst: str,
                 counts: Mapping[str, int]) -> list[str]:
        """The names of the constraints that moving `unit` to `dst` would raise; `counts` is
        each node's number of units under `assignment` (the per-node maximum's input)."""
        after = _Moved(assignment, unit, dst)
        out = []
        for rule in self._touching(unit):
            if isinstance(rule.spec, int):
                if counts.get(dst, 0) + 1 > rule.spec:
                    out.append(rule.name)
            elif _amount(self.state, rule, after) > _amount(self.state, rule, assignment):
                out.append(rule.name)
        return out

    def total(self, assignment: Mapping[str, str]) -> int:
        """The summed violation amount of every constraint (0: all kept)."""
        return sum(_amount(self.state, r, assignment) for r in self.rules)

    def repairs(self, assignment: Mapping[str, str], unit: str, dst: str) -> bool:
        """True if moving `unit` to `dst` lowers the summed amount and raises no single one."""
        after = _Moved(assignment, unit, dst)
        lower = False
        for rule in self._touching(unit):
            now, then = _amount(self.state, rule, assignment), _amount(self.state, rule, after)
            if then > now:
                return False
            lower = lower or then < now
        return lower


def held(state: ClusterState, assignment: Mapping[str, str], units: Iterable[str]
         ) -> dict[str, list[str]]:
    """Of `units` (on nodes marked for removal), those no single move onto a node outside B
    can take without raising a hard constraint, each with the names of the constraints that
    block it (in declaration order). A plan that leaves such a unit on B says so by naming
    them: the budget or the strategy's trade-off is not why it stays."""
    check = MoveCheck(state)
    if not check.active:
        return {}
    targets = [n.id for n in state.nodes if not n.marked_for_removal]
    counts = Counter(assignment.values())
    order = [r.name for r in check.rules]
    out: dict[str, list[str]] = {}
    for unit in units:
        names: set[str] = set()
        for dst in targets:
            if dst == assignment[unit]:
                continue
            blocked = check.blocking(assignment, unit, dst, counts)
            if not blocked:
                break
            names.update(blocked)
        else:
            if names:
                out[unit] = [n for n in order if n in names]
    return out
