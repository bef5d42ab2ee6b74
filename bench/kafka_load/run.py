"""One configuration of the load benchmark (a capacity per instance): every arm started side by
side on one broker, fed the same open-loop stream, then three phases, each a run of periods:

- warm-up at `warm_frac` of the ideal rate, well under every arm's maximum (the JVMs compile,
  reconf's arms plan and apply from unsaturated measurements; its periods without moves are each
  arm's latency floor, floor.py), then a drain of every backlog;
- the ramp: the rate steps up by `step_pct` each period until every arm has failed a step (or
  the rate passes `max_frac` of the ideal); an arm's maximum sustainable rate is the highest
  step it held before its first failure (series.py);
- the fixed phase (optional): after the backlogs drain, 90 % of the default assignor's maximum
  for `fixed_periods` periods, the hot spots shifted at the start of period `shift_at`.

At every period end each arm is measured on the probe's series (latency percentiles, lag,
backlog, results/s) and its instances' snapshots (utilisation, CPU, restores), and each reconf
arm plans (arms.py). The machine's CPU use and load average are recorded with every period.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.kafka_load.arms import LoadArm
from bench.kafka_load.floor import data_bound, floor_windows
from bench.kafka_load.series import (
    Criteria,
    confirmed_failure,
    held,
    max_sustainable,
    periods_to_stable,
)
from runtime.kafka_streams.cluster import NotReached, wait_for
from runtime.kafka_streams.latency import read_probe, utilisation, window
from runtime.kafka_streams.load import KeySpec, LoadGenerator, Probe, ProbedApp

__all__ = ["WIRE", "Settings", "run_config"]

WIRE = "wire"  # the probe's name for the input topic read back

START = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass(frozen=True)
class Settings:
    """What one configuration runs (bench/kafka_load/__init__.py sets it from the options)."""

    tag: str
    capacities: tuple[float, ...]
    arms: tuple[str, ...] = ("default", "milp", "greedy")
    partitions: int = 12
    cost_us: float = 8000.0
    budget: int = 3
    period_s: float = 12.0
    warm_periods: int = 3
    warm_frac: float = 0.35
    start_frac: float = 0.6
    step_pct: float = 7.0
    max_frac: float = 1.2
    fixed: bool = True
    fixed_periods: int = 6
    shift_at: int = 3
    followup_ms: int = 4000
    # batching delays on the record's path, in every arm's latency alike: none by default
    # (docs/benchmarks.md "kafka-load", the floor); fetch_wait_ms None is Kafka's own fetch
    # (answered as soon as a record is there), a number makes it wait for 64 KiB up to that long
    producer_linger_ms: int = 0
    streams_linger_ms: int = 0
    fetch_wait_ms: int | None = None
    keys: KeySpec = field(default_factory=KeySpec)
    criteria: Criteria = field(default_factory=Criteria)

    @property
    def ideal(self) -> float:
        """Records/s the instances take at perfect balance: Σ capacity / cost."""
        return sum(self.capacities) * 1e6 / self.cost_us


def _proc_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used; 0 if it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    f = raw[raw.rfind(")") + 2:].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def _cpu() -> tuple[int, int]:
    """(busy, total) jiffies of the machine (/proc/stat)."""
    f = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = f[3] + (f[4] if len(f) > 4 else 0)
    return sum(f) - idle, sum(f)


@dataclass
class _Run:
    s: Settings
    arms: list[LoadArm]
    gen: LoadGenerator
    probe: Probe
    say: Callable[[str], None]
    helpers: dict[str, int] = field(default_factory=dict)  # broker, producer, probe: name -> pid
    n: int = 0
    last_assign: dict[str, dict[str, str]] = field(default_factory=dict)

    def period(self, phase: str, rate: float, shift: int = 0) -> list[dict[str, Any]]:
        self.n += 1
        if rate != self.gen.rate:
            self.gen.set_rate(rate)
        if shift != self.gen.hot_spot:
            self.gen.shift(shift)
        c0, t0 = _cpu(), self.probe.now_ms()
        h0 = {name: _proc_cpu_s(pid) for name, pid in self.helpers.items()}
        for arm in self.arms:
            if not arm.snap:
                arm.mark()
        befores = {arm.name: dict(arm.snap) for arm in self.arms}
        time.sleep(self.s.period_s)
        t1, c1 = self.probe.now_ms(), _cpu()
        helper_cpu = {name: (_proc_cpu_s(pid) - h0[name]) / max(1e-3, (t1 - t0) / 1000)
                      for name, pid in self.helpers.items()}
        lines = read_probe(self.probe.out)
        machine = 100.0 * (c1[0] - c0[0]) / max(1, c1[1] - c0[1]) * (os.cpu_count() or 1)
        settle = t0 + int(self.s.period_s * 1000 / 3)
        rows = []
        end = START + timedelta(seconds=self.n * self.s.period_s)
        for arm in self.arms:
            full = window(lines, arm.name, t0, t1).as_dict()
            tail = window(lines, arm.name, settle, t1).as_dict()
            ok, why = held(tail, rate, self.s.criteria)
            fields = arm.period_end(self.n, end)
            after = arm.snap
            before = befores[arm.name]
            util = utilisation(before, after)
            # the JVM's CPU (its instances share it), once per process
            cpu = {str(a["pid"]): (int(a["process_cpu_ns"]) - int(before[n]["process_cpu_ns"]))
                   / max(1, (int(a["ts_ms"]) - int(before[n]["ts_ms"])) * 1e6)
                   for n, a in after.items() if n in before and before[n]["pid"] == a["pid"]}
            prev = self.last_assign.get(arm.name, fields["assignment"])
            moved = sorted(t for t, n in fields["assignment"].items() if prev.get(t) != n)
            self.last_assign[arm.name] = fields["assignment"]
            row = {"config": self.s.tag, "capacities": list(self.s.capacities), "arm": arm.name,
                   "phase": phase, "period": self.n, "rate": rate, "hot_spot": shift,
                   "held": ok, "why": why, "tail": tail, **full,
                   "utilisation": util, "jvm_cpu": cpu, "moved": moved,
                   "machine_cpu_pct": machine, "helper_cpu": helper_cpu,
                   "loadavg": os.getloadavg()[0], **fields}
            rows.append(row)
            p99 = "-" if full["p99"] is None else f"{full['p99']:.0f}"
            self.say(f"  {self.s.tag} {phase:5} p{self.n:02d} {arm.name:7} rate {rate:6.0f}/s "
                     f"out {full['out_per_s']:6.0f}/s p99 {p99:>6} ms backlog "
                     f"{full['backlog_last']:7.0f} (slope {tail['backlog_slope']:6.0f}/s) util "
                     f"{' '.join(f'{u:.2f}' for _, u in sorted(util.items()))}  moved "
                     f"{len(moved)}{' published v' + str(fields['published']) if fields['published'] else ''}"
                     f"  {'' if ok else 'FAIL: ' + why}")
        ours = 100 * (sum(helper_cpu.values()) + sum(sum(r["jvm_cpu"].values()) for r in rows))
        self.say(f"  CPU: machine {machine:.0f} % of one core, this benchmark's JVMs {ours:.0f} % "
                 f"(broker {100 * helper_cpu.get('broker', 0):.0f} %), load average "
                 f"{os.getloadavg()[0]:.1f}")
        return rows

    def settle(self, rate: float, timeout_s: float = 240.0) -> bool:
        """Run at `rate` until every arm keeps up (its last 5 s: p99 within the bound, backlog
        under a second of input): the JVMs' start-up (class loading, JIT compilation) is over.
        Then every arm's period starts afresh, so no plan is made on start-up measurements."""
        self.gen.set_rate(rate)

        def calm() -> bool:
            now = self.probe.now_ms()
            lines = read_probe(self.probe.out)
            for arm in self.arms:
                w = window(lines, arm.name, now - 5000, now + 1)
                if w.samples < 4 or w.p99 is None or w.p99 > self.s.criteria.p99_ms \
                        or w.backlog_max > rate:
                    return False
            return True
        try:
            wait_for(calm, timeout_s, "every arm keeping up after start-up", every_s=1.0)
            ok = True
        except NotReached:
            ok = False
        for arm in self.arms:
            arm.mark()
        return ok

    def drain(self, timeout_s: float = 240.0) -> bool:
        """Pause the load until every arm's backlog is 0; False if one is not within the time."""
        self.gen.pause()

        def empty() -> bool:
            lines = read_probe(self.probe.out)
            last = {ln.arm: ln for ln in lines}
            return all(a.name in last and last[a.name].backlog == 0 for a in self.arms)
        try:
            wait_for(empty, timeout_s, "every arm's backlog drained", every_s=1.0)
        except NotReached:
            return False
        return True


def _fixed_windows(rows: list[dict[str, Any]], lines: list[Any], arms: list[str],
                   shift_at: int) -> dict[str, dict[str, Any]]:
    """Each arm over the fixed phase before the shift and from it on: exact percentiles of the
    merged histograms, not an average of the periods'."""
    fixed = sorted({(r["period"], r["start_ms"], r["end_ms"]) for r in rows
                    if r["phase"] == "fixed" and r["arm"] == arms[0]})
    t0, t_end = fixed[0][1], fixed[-1][2]
    t_shift = fixed[shift_at - 1][1] if shift_at - 1 < len(fixed) else t_end
    out: dict[str, dict[str, Any]] = {}
    for arm in arms:
        out[arm] = {"before_shift": window(lines, arm, t0, t_shift).as_dict()}
        if t_shift < t_end:
            out[arm]["after_shift"] = window(lines, arm, t_shift, t_end).as_dict()
    return out


def run_config(s: Settings, bootstrap: str, work: Path, say: Callable[[str], None],
               broker_pid: int | None = None) -> dict[str, Any]:
    """Start the arms, run the phases, stop everything (also on failure); the rows and the
    per-arm maxima."""
    home = work / s.tag
    arms = [LoadArm.make(name, None if name == "default" else name, bootstrap, home,
                         capacities=list(s.capacities), partitions=s.partitions,
                         cost_us=s.cost_us, budget=s.budget, followup_ms=s.followup_ms,
                         tag=s.tag, linger_ms=s.streams_linger_ms, fetch_wait_ms=s.fetch_wait_ms)
            for name in s.arms]
    gen = LoadGenerator(bootstrap, [a.cluster.spec.input_topic for a in arms], home / "load",
                        s.keys, linger_ms=s.producer_linger_ms)
    # the wire: the first arm's input read back (producer -> broker -> probe), the part of every
    # latency no placement touches
    first = arms[0].cluster.spec.input_topic
    probe = Probe(bootstrap, [a.probed for a in arms]
                  + [ProbedApp(WIRE, first, first, f"{first}-none")], home / "probe")
    rows: list[dict[str, Any]] = []
    try:
        arms[0].cluster.create_topics([t for a in arms[1:] for t in a.topics()])
        for arm in arms:
            arm.start()
        for arm in arms:
            wait_for(arm.cluster.reported_assignment, 240, f"arm {arm.name}: every task running",
                     logs=arm.cluster.home / "logs")
        probe.start()
        gen.start()
        helpers = {"producer": gen.pid, "probe": probe.pid}
        if broker_pid is not None:
            helpers["broker"] = broker_pid
        run = _Run(s, arms, gen, probe, say, {k: v for k, v in helpers.items() if v})
        settled = run.settle(s.warm_frac * s.ideal)
        say(f"  {s.tag}: start-up {'settled' if settled else 'NOT settled in 240 s'}")
        for _ in range(s.warm_periods):
            rows += run.period("warm", s.warm_frac * s.ideal)
        drained = [run.drain()]
        floor = floor_windows(rows, read_probe(probe.out), [a.name for a in arms])
        rate = s.start_frac * s.ideal
        steps: dict[str, list[tuple[float, bool]]] = {a.name: [] for a in arms}
        while rate <= s.max_frac * s.ideal:
            got = run.period("ramp", rate)
            rows += got
            for r in got:
                steps[r["arm"]].append((rate, bool(r["held"])))
            if all(confirmed_failure(v) for v in steps.values()):
                break
            rate *= 1 + s.step_pct / 100
        maxima = {a: max_sustainable(v) for a, v in steps.items()}
        result: dict[str, Any] = {
            "config": s.tag, "capacities": list(s.capacities), "ideal": s.ideal,
            "max_rate": {a: m[0] for a, m in maxima.items()},
            "censored": {a: m[1] for a, m in maxima.items()}, "fixed_rate": None,
            "settled": settled, "drained": drained, "stable_after_shift": {},
            "floor": floor, "warm_rate": s.warm_frac * s.ideal,
            "bound": data_bound(rows, s.capacities, read_probe(probe.out))}
        base = result["max_rate"].get("default")
        if s.fixed and base:
            drained.append(run.drain())
            fixed = 0.9 * base
            result["fixed_rate"] = fixed
            verdicts: dict[str, list[bool]] = {a.name: [] for a in arms}
            for k in range(1, s.fixed_periods + 1):
                got = run.period("fixed", fixed, shift=1 if k >= s.shift_at else 0)
                rows += got
                if k >= s.shift_at:
                    for r in got:
                        verdicts[r["arm"]].append(bool(r["held"]))
            result["stable_after_shift"] = {a: periods_to_stable(v) for a, v in verdicts.items()}
            result["fixed"] = _fixed_windows(rows, read_probe(probe.out), [a.name for a in arms],
                                             s.shift_at)
        result["series"] = [[ln.ts_ms, ln.arm, ln.backlog, ln.lag, ln.out]
                            for ln in read_probe(probe.out)]
    finally:
        gen.close()
        probe.close()
        for arm in arms:
            arm.cluster.stop_all()
    result["rows"] = rows
    return result
