"""The wave planner: a plan's moves in ordered waves under a job's execution limits.

A published plan is a target; applying every move at once makes the receiving nodes carry the
moving units' load while their senders still carry it too, and all the state transfers at once.
Cruise Control's executor throttles and orders moves for that reason; this is reconf's version,
a pure function ``plan_waves(state, moves, limits) -> Schedule`` (docs/algorithms.md, "Waves").

Load while moving (the model every rule below uses): while unit g_k moves from n_s to n_d, its
load gLoad_k counts on *both* nodes (the source still processes its input until the state is
handed over; the destination already replays the buffered input). After its wave it counts on
n_d only. A node's utilisation is sum(load) / capacity in % of a reference node
(placement/model.py), the ceiling `limits.ceiling_pct` is in the same unit.

Ordering rule (greedy, wave by wave, recomputed on the assignment reached so far): among the
moves still to make, take first
  1. moves off nodes marked for removal (set B: drain them first),
  2. then moves off nodes above the ceiling (or, without a ceiling, above the mean utilisation),
  3. then the largest relief per state byte, gLoad_k / max(|sigma_k|, 1),
  4. then the key group id (a deterministic tie-break),
and add each to the current wave when it keeps every limit: the per-node concurrency (a node
takes part as source or destination in at most `max_moves_per_node` moves of a wave), the moves
per wave, the state bytes per wave (a unit larger than the byte limit moves alone in its own
wave) and the ceiling.

Byte rate: under `max_bytes_per_second` (R), kept in the schedule's limits, each wave's expected
duration is its state bytes / R (`Schedule.expected_s`), the least time a runtime may take to
move it (runtime/execution.py paces the waves so no wave moves faster). The rate changes no
wave's content: it stretches time, not the order.

Ceiling rule: a move may join a wave only if its destination's load during the wave (its load on
the assignment reached so far, plus every unit arriving in this wave, this one included) stays
at or under ceiling_pct * capacity. Loads only fall at sources, so the load after the wave is at
or under the load during it: no intermediate assignment breaks the ceiling either. Guarantee:
when no node's current load plus the load of every unit the plan moves onto it exceeds the
ceiling, no wave breaks it (property-tested in tests/test_waves.py); beyond that the greedy
order still finds a safe sequence whenever draining sources first makes room.

When no remaining move fits even alone in an empty wave (the plan's target itself puts a node
over the ceiling, or two full nodes swap units), the planner still schedules every move — the
plan is the target and the final assignment must be the plan's — but one move per wave, the one
whose destination ends least over the ceiling, and marks that wave `over_ceiling`. The schedule
says so (MLflow logs the count) and why (`Schedule.over_causes`: the target puts the node over
the ceiling, or the target keeps it and only the move in flight breaks it, as in a swap), so an
operator sees whether the plan or only its execution is unsafe.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from placement.model import ClusterState, KeyGroup, Move
from schemas.manifest import assignment_checksum
from schemas.schedule import (
    OVER_IN_FLIGHT,
    OVER_TARGET,
    Schedule,
    ScheduledMove,
    Wave,
    WaveLimits,
    apply_waves,
)

__all__ = ["WaveLimits", "plan_waves", "utilisation"]


def utilisation(state: ClusterState, assignment: Mapping[str, str]) -> dict[str, float]:
    """Each node's sum(load) / capacity on `assignment`, in % of a reference node."""
    load = {n.id: 0.0 for n in state.nodes}
    units = {k.id: k.load for k in state.keygroups}
    for kg, node in assignment.items():
        if node in load:
            load[node] += units.get(kg, 0.0)
    return {n.id: load[n.id] / n.capacity for n in state.nodes}


def plan_waves(state: ClusterState, moves: Sequence[Move], limits: WaveLimits,
               target: Mapping[str, str] | None = None) -> Schedule:
    """Split `moves` into ordered waves under `limits` (see the module docstring for the rules).

    `target` is the plan's assignment (for the schedule's checksum); by default the current
    assignment with every move applied. Every move is in exactly one wave; applying the waves in
    order to the current assignment gives the target.
    """
    current = dict(state.assignment)
    for m in moves:
        if current.get(m.keygroup) != m.src:
            raise ValueError(f"move of {m.keygroup!r} from {m.src!r}: the unit is on "
                             f"{current.get(m.keygroup)!r} in the current assignment")
    if len({m.keygroup for m in moves}) != len(moves):
        raise ValueError("a plan moves each unit at most once")
    unit = {k.id: k for k in state.keygroups}
    cap = {n.id: n.capacity for n in state.nodes}
    ceiling = limits.ceiling_pct
    load = {n: u * cap[n] for n, u in utilisation(state, current).items()}  # absolute load
    for m in moves:  # a node the plan adds (scaling) starts empty, as a reference node
        cap.setdefault(m.dst, 1.0)
        load.setdefault(m.dst, 0.0)
    marked = frozenset(n.id for n in state.nodes if n.marked_for_removal)
    remaining = list(moves)
    waves: list[Wave] = []
    while remaining:
        util = {n: load[n] / cap[n] for n in cap}
        bar = ceiling if ceiling is not None else sum(util.values()) / len(util)
        remaining.sort(key=lambda m: _priority(m, marked, util, bar, unit))
        wave, during = _fill(remaining, load, cap, limits, unit)
        over = False
        if not wave:
            wave = [_least_over(remaining, load, cap, unit)]
            during = dict(load)
            during[wave[0].dst] += unit[wave[0].keygroup].load
            over = True
        picked = {m.keygroup for m in wave}
        remaining = [m for m in remaining if m.keygroup not in picked]
        for m in wave:
            load[m.src] -= unit[m.keygroup].load
            load[m.dst] += unit[m.keygroup].load
        peak = max(during[n] / cap[n] for n in cap)
        waves.append(Wave(tuple(ScheduledMove(m.keygroup, m.src, m.dst,
                                              unit[m.keygroup].state_bytes) for m in wave),
                          peak, over))
    final = dict(target) if target is not None else apply_waves(state.assignment, tuple(waves))
    sealed = Schedule.sealed(tuple(waves), limits, assignment_checksum(final))
    return dataclasses.replace(sealed, over_causes=tuple(
        _over_cause(w, load, cap, ceiling) if w.over_ceiling else None for w in waves))


def _over_cause(wave: Wave, final: Mapping[str, float], cap: Mapping[str, float],
                ceiling: float | None) -> str:
    """Why an over-ceiling wave (one move) is over: its destination ends over the ceiling on
    the plan's target, or only the moving unit, counted on both ends while it moves, takes it
    over (two full nodes swapping units): an operator fixes the first in the plan, the second
    by lowering load or raising the ceiling, so the audit must not blame the target for it."""
    dst = wave.moves[0].dst
    over = ceiling is not None and final[dst] > ceiling * cap[dst] + 1e-9
    return OVER_TARGET if over else OVER_IN_FLIGHT


def _priority(m: Move, marked: frozenset[str], util: Mapping[str, float], bar: float,
              unit: Mapping[str, KeyGroup]) -> tuple[bool, bool, float, str]:
    """The ordering rule's key (module docstring): drain marked nodes, then nodes above `bar`
    (the ceiling, else the mean utilisation), then the largest relief per state byte."""
    kg = unit[m.keygroup]
    relief = kg.load / max(kg.state_bytes, 1.0)
    return (m.src not in marked, not util[m.src] > bar, -relief, m.keygroup)


def _fill(ordered: Sequence[Move], load: Mapping[str, float], cap: Mapping[str, float],
          limits: WaveLimits, unit: Mapping[str, KeyGroup]) -> tuple[list[Move], dict[str, float]]:
    """One wave: the moves, in priority order, that keep every limit; and the loads during it."""
    wave: list[Move] = []
    during = dict(load)
    busy: dict[str, int] = {}
    wave_bytes = 0.0
    for m in ordered:
        if limits.max_moves_per_wave is not None and len(wave) >= limits.max_moves_per_wave:
            break
        per_node = limits.max_moves_per_node
        if per_node is not None and (busy.get(m.src, 0) >= per_node
                                     or busy.get(m.dst, 0) >= per_node):
            continue
        size = float(unit[m.keygroup].state_bytes)
        if (limits.max_bytes_per_wave is not None and wave
                and wave_bytes + size > limits.max_bytes_per_wave):
            continue
        added = float(unit[m.keygroup].load)
        if (limits.ceiling_pct is not None
                and during[m.dst] + added > limits.ceiling_pct * cap[m.dst] + 1e-9):
            continue
        if (limits.max_bytes_per_wave is not None and not wave
                and size > limits.max_bytes_per_wave):
            wave.append(m)  # a unit larger than the byte limit moves alone
            during[m.dst] += added
            break
        wave.append(m)
        during[m.dst] += added
        wave_bytes += size
        busy[m.src] = busy.get(m.src, 0) + 1
        busy[m.dst] = busy.get(m.dst, 0) + 1
    return wave, during


def _least_over(ordered: Sequence[Move], load: Mapping[str, float], cap: Mapping[str, float],
                unit: Mapping[str, KeyGroup]) -> Move:
    """The move whose destination ends least over its ceiling share (ties: priority order)."""
    def excess(m: Move) -> float:
        return (load[m.dst] + float(unit[m.keygroup].load)) / cap[m.dst]
    return min(ordered, key=excess)
