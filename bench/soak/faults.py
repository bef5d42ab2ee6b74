"""The soak's fault kinds: one small class per kind behind one interface (Cruise Control's
anomaly kinds, each a unit of its own).

A fault acts just before a step of the period (`steps`: where the schedule may put it) and
returns what it did (`Injected`). The step it precedes then runs as usual: for a kill, that is
the rerun that must complete the killed stage; for bad input, the run after the operator's fix.
A fault whose precondition does not hold (nothing to roll back to, no fresh version to tamper
with, a fail point the path did not reach) says so and counts as not injected. A fault that
finds the system behaving otherwise than documented returns a `problem`: a violation of the
period, reported with the seed to replay it.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Protocol

from bench.soak.forker import Command, Outcome
from bench.soak.world import World

__all__ = ["ALERT_OK", "ANY", "OK", "REFUSED", "REFUSED_APPLY", "Fault", "Injected", "refused"]

#: what a command must do (bench/soak/invariants.py judges it): succeed, be refused (exit 2 with
#: what/where/fix), anything (a kill's victim, an action that may be refused), exit 0 or an
#: alert (exit 1, a heal that does nothing), or a runtime's refusal (exit 1, "refused")
OK, REFUSED, ANY, ALERT_OK, REFUSED_APPLY = "ok", "refused", "any", "alert-ok", "refused-apply"


@dataclass(frozen=True)
class Injected:
    """What a fault did: `applied` False when its precondition did not hold (`detail` says why);
    `problem` when the system broke a documented rule; `known` names a defect already filed."""

    kind: str
    detail: str
    applied: bool = True
    problem: str | None = None
    known: str | None = None


class Fault(Protocol):
    @property
    def kind(self) -> str: ...

    @property
    def steps(self) -> tuple[str, ...]:  # the steps it may precede
        ...

    @property
    def replaces(self) -> bool:  # the step it precedes is done by the fault itself
        ...

    def inject(self, w: World, rng: random.Random) -> Injected: ...


def refused(kind: str, detail: str, out: Outcome, *, code: int = 2) -> Injected:
    """Bad input must be refused with exit `code` (its message is the checker's to judge)."""
    if out.rc == code:
        return Injected(kind, detail)
    return Injected(kind, detail, problem=f"{' '.join(out.argv)}: expected exit {code} "
                    f"(refused), got {out.rc}")


@dataclass(frozen=True)
class KillAt:
    """kill -9 of a stage at one of its fail points (jobs/faults.py); the step's normal run
    after it is the rerun that must complete it."""

    kind: str
    steps: tuple[str, ...]
    points: tuple[str, ...]
    replaces: bool = False

    def inject(self, w: World, rng: random.Random) -> Injected:
        point = rng.choice(self.points)
        step = self.steps[0]
        out = w.one(self.kind, w.step_command(step, failpoint=point), expected=ANY)
        if out.killed:
            return Injected(self.kind, point)
        return Injected(self.kind, f"{point} (not reached: exit {out.rc})", applied=False)


@dataclass(frozen=True)
class KillAnywhere:
    """kill -9 of a stage at a random moment, wherever it is (the timer, not a fail point)."""

    kind: str = "kill-random"
    steps: tuple[str, ...] = ("collect", "validate", "plan", "publish", "apply")
    replaces: bool = False

    def inject(self, w: World, rng: random.Random) -> Injected:
        step = w.current  # the step the schedule put it before
        after = round(rng.uniform(0.05, 1.5), 3)
        out = w.one(self.kind, w.step_command(step, kill_after=after), expected=ANY)
        return Injected(self.kind, f"{step} after {after} s", applied=out.killed)


@dataclass(frozen=True)
class KillAction:
    """kill -9 of an operator action at its fail point, then the action again (its rerun)."""

    kind: str
    steps: tuple[str, ...]
    point: str

    replaces: bool = False

    def inject(self, w: World, rng: random.Random) -> Injected:
        command = _action(self.kind, w, rng)
        if command is None:
            return Injected(self.kind, "nothing to act on", applied=False)
        argv, expected = command
        if argv[0] == "decide":
            first = w.action(*argv, expected=ANY, failpoint=self.point)
        else:
            first = w.one(self.kind, Command(argv, {"RECONF_FAILPOINT": self.point}), ANY)
        if not first.killed:
            return Injected(self.kind, f"{self.point} (not reached: exit {first.rc})",
                            applied=False)
        again = (w.action(*argv, expected=expected) if argv[0] == "decide"
                 else w.one(f"{self.kind} rerun", Command(argv), expected))
        return Injected(self.kind, f"{self.point}, rerun exit {again.rc}")


def _action(kind: str, w: World, rng: random.Random) -> tuple[tuple[str, ...], str] | None:
    """The argv of a killable action and what its rerun must do."""
    if kind == "kill-rollback":
        newest = w.newest_version()
        if newest < 2:
            return None
        return (("rollback", "--job", w.job, "--to-version", str(rng.randint(1, newest - 1)),
                 "--reason", "soak: kill mid-rollback", "--override-budget", "soak"), OK)
    if kind == "kill-heal":
        # a dead node's units must move, so the heal publishes and reaches its fail point (an
        # over-capacity report of this balanced job mostly has nothing to move)
        report = _health_report(w, rng, "kill", dead=True)
        return (("heal", "--job", w.job, "--report-id", report), ANY) if report else None
    if kind == "kill-whatif":
        return (("whatif", "--job", w.job, "--period-end", w.end()), OK)
    if kind == "kill-approval":
        return (("decide", "--job", w.job, "--period-end", w.end(), "--outcome", "rejected"), OK)
    raise ValueError(kind)


#: a dead-node report only while the runtime runs more nodes than this (each one is for good)
MIN_NODES_FOR_DEAD = 6


def _health_report(w: World, rng: random.Random, tag: str, dead: bool = False) -> str | None:
    """A runtime's finding on one of the nodes it runs: far over capacity, or (`dead`, while
    it runs more than MIN_NODES_FOR_DEAD nodes) dead; the report's id."""
    from schemas.health import HealthReport, write_report
    from schemas.landing import parse_period_end

    state = w.runtime / "runtime.json"
    if not state.is_file():
        return None
    nodes = json.loads(state.read_text())["nodes"]
    node = rng.choice(nodes)
    dead = dead and len(nodes) > MIN_NODES_FOR_DEAD
    report_id = f"soak-p{w.period:04d}-{tag}-{'dead' if dead else 'over'}-{node}"
    write_report(w.home / "landing", HealthReport(
        w.job, report_id, parse_period_end(w.end()), (node,) if dead else (),
        {} if dead else {node: round(rng.uniform(1.6, 2.4), 2)}))
    return report_id


@dataclass(frozen=True)
class Heal:
    """The runtime reports a node far over capacity; the operator heals it (a version, or an
    alert: exit 1)."""

    kind: str = "heal"
    steps: tuple[str, ...] = ("plan", "publish", "apply")
    replaces: bool = False

    def inject(self, w: World, rng: random.Random) -> Injected:
        report = _health_report(w, rng, "heal")
        if report is None:
            return Injected(self.kind, "no runtime yet", applied=False)
        out = w.one(self.kind, Command(("heal", "--job", w.job, "--report-id", report)),
                    ALERT_OK)
        return Injected(self.kind, f"{report}: exit {out.rc}")


@dataclass(frozen=True)
class Rollback:
    """The operator rolls back to a random earlier version (with or without a budget override:
    a refusal for the budget is one message, exit 2)."""

    kind: str = "rollback"
    steps: tuple[str, ...] = ("plan", "publish", "apply")
    replaces: bool = False

    def inject(self, w: World, rng: random.Random) -> Injected:
        newest = w.newest_version()
        if newest < 2:
            return Injected(self.kind, "fewer than two versions", applied=False)
        to = rng.randint(1, newest - 1)
        argv: tuple[str, ...] = ("rollback", "--job", w.job, "--to-version", str(to), "--reason",
                                 "soak rollback")
        if rng.random() < 0.5:
            argv += ("--override-budget", "soak")
        out = w.one(self.kind, Command(argv), ANY)
        return Injected(self.kind, f"v{newest} -> v{to}: exit {out.rc}")


@dataclass(frozen=True)
class Stop:
    """The operator stops the runtime between waves (before it applies, or with nothing to
    apply: the flag waits for the next version)."""

    kind: str = "stop"
    steps: tuple[str, ...] = ("publish", "apply")
    replaces: bool = False

    def inject(self, w: World, rng: random.Random) -> Injected:
        w.one(self.kind, Command(("stop", "--job", w.job, "--reason", "soak stop")))
        return Injected(self.kind, "stop flag")


@dataclass(frozen=True)
class Approval:
    """The approver rejects the period's plan, or nobody answers in time: publish refuses it
    and the cycle plans again (world.publish)."""

    kind: str
    outcome: str
    steps: tuple[str, ...] = ("publish",)
    replaces: bool = False

    def inject(self, w: World, rng: random.Random) -> Injected:
        out = w.action("decide", "--job", w.job, "--period-end", w.end(), "--outcome",
                       self.outcome, expected=ANY)
        return Injected(self.kind, f"exit {out.rc}", applied=out.rc == 0)


@dataclass(frozen=True)
class ConcurrentPlan:
    """Two plans of the same period at once (a re-run task beside the scheduled one): two
    attempts, both recorded; publish takes the newest."""

    kind: str = "concurrent-plan"
    steps: tuple[str, ...] = ("plan",)
    replaces: bool = True

    def inject(self, w: World, rng: random.Random) -> Injected:
        outs = w.do(self.kind, w.step_command("plan"), w.step_command("plan"))
        bad = [o.rc for o in outs if o.rc != 0]
        return Injected(self.kind, "2 plans", problem=f"concurrent plans exited {bad}"
                        if bad else None)

