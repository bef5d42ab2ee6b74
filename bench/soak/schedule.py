"""The seeded fault schedule: which faults fall on which period, before which step.

Each period's draw depends only on the seed and the period's number (its own `random.Random`),
so a run of P periods with seed S injects exactly the faults of the first P periods of any longer
run with seed S: `--seed S --periods P` replays a violation found at period P. The draw is of
kinds, steps and a parameter seed each; what a fault then picks (a fail point, a version, a
node) it draws from its own parameter seed. The slice through the real scheduler (scheduled.py)
draws one kill a period the same way (`draw_kill`): which service, and the moment of its run.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass

from bench.soak.badinput import (
    CorruptLanding,
    DroppedSchedule,
    LateLanding,
    MalformedHealth,
    OffGrid,
    TamperedManifest,
)
from bench.soak.faults import (
    Approval,
    ConcurrentPlan,
    Fault,
    Heal,
    KillAction,
    KillAnywhere,
    KillAt,
    Rollback,
    Stop,
)
from bench.soak.world import STEPS

__all__ = ["FAULTS", "SCHEDULER_KILLS", "STAGES", "Draw", "Kill", "draw", "draw_kill", "schedule"]

_AFTER_PUBLISH = ("apply",)

#: every kind, by name; the kill kinds cover every fail point of the stages and actions
FAULTS: Mapping[str, Fault] = {f.kind: f for f in (
    KillAt("kill-collect", ("collect",), ("collect.node_stats", "collect.comm_stats",
                                          "collect.keygroup_stats", "collect.marker")),
    KillAt("kill-plan", ("plan",), ("plan.moves", "plan.row")),
    KillAt("kill-publish", ("publish",), ("publish.manifest.chunk", "publish.manifest",
                                          "publish.assignments", "publish.version",
                                          "publish.latest", "publish.status")),
    KillAt("kill-apply", ("apply",), ("runtime.wave",)),
    KillAction("kill-heal", ("plan", "apply"), "heal.version"),
    KillAction("kill-rollback", ("plan", "apply"), "rollback.version"),
    KillAction("kill-whatif", _AFTER_PUBLISH, "whatif.record"),
    KillAction("kill-approval", ("publish",), "approval.record"),
    KillAnywhere(),
    CorruptLanding(),
    LateLanding(),
    OffGrid(),
    MalformedHealth(),
    TamperedManifest("tampered-manifest", "assignment"),
    TamperedManifest("tampered-schedule", "schedule"),
    DroppedSchedule,
    Stop(),
    Rollback(),
    Heal(),
    Approval("approval-rejected", "rejected"),
    Approval("approval-timeout", "timed_out"),
    ConcurrentPlan(),
)}

#: faults per period: 0, 1 or 2 (mean 0.8)
_COUNTS = (0, 0, 1, 1, 2)


@dataclass(frozen=True)
class Draw:
    """One scheduled fault: its kind, the step it precedes and the seed of its own choices."""

    period: int
    kind: str
    step: str
    seed: int


def draw(seed: int, period: int, kinds: tuple[str, ...] | None = None) -> tuple[Draw, ...]:
    """The faults of `period` under `seed`, in the order of the steps they precede."""
    rng = random.Random(f"soak/{seed}/{period}")
    names = kinds if kinds is not None else tuple(FAULTS)
    out = []
    for _ in range(rng.choice(_COUNTS) if names else 0):
        kind = rng.choice(names)
        out.append(Draw(period, kind, rng.choice(FAULTS[kind].steps), rng.getrandbits(32)))
    return tuple(sorted(out, key=lambda d: STEPS.index(d.step)))


def schedule(seed: int, periods: int, kinds: tuple[str, ...] | None = None
             ) -> tuple[Draw, ...]:
    """Every period's draw, periods 1..`periods`."""
    return tuple(d for p in range(1, periods + 1) for d in draw(seed, p, kinds))


#: the kinds of the slice through the real scheduler (scheduled.py), by the service each kills
SCHEDULER_KILLS = {"kill-scheduler": "scheduler", "kill-triggerer": "triggerer",
                   "kill-dag-processor": "dag-processor"}
#: the stages whose running marks a scheduler's or a dag-processor's kill
STAGES = ("collect", "validate", "plan", "publish")


@dataclass(frozen=True)
class Kill:
    """A period's kill: the service; the task whose state marks the moment (a stage running,
    or one after it; the triggerer: `wait_for_landing` deferred), the pause after it, how long
    the service stays dead, and (triggerer) whether the period lands before the restart."""

    kind: str
    task: str
    pause_s: float
    down_s: float
    land_first: bool

    @property
    def service(self) -> str:
        return SCHEDULER_KILLS[self.kind]


def draw_kill(seed: int, period: int, kinds: tuple[str, ...]) -> Kill | None:
    """Period `period`'s kill under `seed` (its own generator: `--scheduled P` replays 1..P)."""
    if not kinds:
        return None
    rng = random.Random(f"soak-scheduled/{seed}/{period}")
    kind = rng.choice(kinds)
    task = "wait_for_landing" if SCHEDULER_KILLS[kind] == "triggerer" else rng.choice(STAGES)
    return Kill(kind, task, round(rng.uniform(0.0, 1.5), 2), round(rng.uniform(0.0, 3.0), 2),
                rng.random() < 0.5)
