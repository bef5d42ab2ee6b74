"""The load benchmark's judgements on recorded series: whether an arm held a rate, its maximum
sustainable rate, how many periods its lag took to settle after the hot-spot shift, and the
issue's targets as match / beat / miss. Pure functions of the rows the run records, so they are
tested without a broker (tests/runtime/test_kafka_load_series.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["DOC", "Criteria", "Target", "confirmed_failure", "differs", "held", "max_sustainable",
           "periods_to_stable", "ratio_target"]


@dataclass(frozen=True)
class Criteria:
    """An arm holds a rate over a window when its backlog (records produced without a result
    yet) does not grow faster than `slope_frac` × the rate — the lag grows without bound
    otherwise — and its p99 latency stays under `p99_ms`."""

    slope_frac: float = 0.05
    p99_ms: float = 1000.0

    def __post_init__(self) -> None:
        if not 0 < self.slope_frac < 1:
            raise ValueError(f"slope_frac must be in (0, 1), got {self.slope_frac}")
        if self.p99_ms <= 0:
            raise ValueError(f"p99_ms must be > 0, got {self.p99_ms}")


def held(window: Mapping[str, Any], rate: float, criteria: Criteria) -> tuple[bool, str]:
    """(held?, why) of one arm's window (latency.Window.as_dict()) at `rate` records/s."""
    slope = float(window["backlog_slope"])
    p99 = window["p99"]
    if window["results"] == 0 and rate > 0:
        return False, "no results"
    if slope > criteria.slope_frac * rate:
        return False, f"backlog grows {slope:.0f}/s (> {criteria.slope_frac:.0%} of {rate:.0f}/s)"
    if p99 is not None and float(p99) > criteria.p99_ms:
        return False, f"p99 {float(p99):.0f} ms > {criteria.p99_ms:.0f} ms"
    return True, "held"


def max_sustainable(steps: Sequence[tuple[float, bool]], confirm: int = 2
                    ) -> tuple[float | None, bool]:
    """(the highest rate held before the first confirmed failure, whether the ramp ended
    without one: then the maximum is at least that rate, censored). Steps ascend. A failure is
    confirmed when the `confirm` − 1 steps after it fail too (or the ramp ends there): a step
    lost to a noisy neighbour and followed by a held one is the machine's, not the arm's."""
    best: float | None = None
    for i, (rate, ok) in enumerate(steps):
        if ok:
            best = rate
            continue
        after = steps[i + 1:i + confirm]
        if all(not later for _, later in after):
            return best, False
    return best, True


def confirmed_failure(steps: Sequence[tuple[float, bool]], confirm: int = 2) -> bool:
    """The arm has failed a step and every step since (at least `confirm` in a row)."""
    return len(steps) >= confirm and not any(ok for _, ok in steps[-confirm:])


def periods_to_stable(verdicts: Sequence[bool]) -> int | None:
    """Periods after a disturbance (verdicts of the periods from the one it happened in on)
    until the arm holds and keeps holding: 0 = it never stopped holding; None = not stable by
    the end of the series."""
    for i in range(len(verdicts)):
        if all(verdicts[i:]):
            return i
    return None


DOC = "docs/benchmarks.md §kafka-load"


def differs(cause: str, where: str = DOC) -> str:
    """The verdict of a target missed for a cause this run measured: `differs (explained:
    <cause>; <where the docs discuss it>)`. A miss without a measured cause stays `miss`."""
    return f"differs (explained: {cause}; {where})"


@dataclass(frozen=True)
class Target:
    """One target's verdict: `match` (met), `beat` (met with room: beyond the target by more
    than the measurement's resolution), `miss`, `differs (explained: …)` (missed for a cause
    measured in the same run, `differs`), `inconclusive (…)` (a figure the run's own
    measurements say is impossible, so noise set it), or `n/a` (not measurable in this run)."""

    name: str
    measured: str
    wanted: str
    verdict: str


def ratio_target(name: str, arm: float | None, base: float | None, wanted: float,
                 resolution: float, censored: bool = False,
                 bound: Mapping[str, Any] | None = None) -> Target:
    """arm / base ≥ `wanted`: `beat` when ≥ wanted × `resolution` (one rate step beyond).
    A censored arm (it held every step) has a ratio of at least the one measured. A miss is
    `differs` when the run's measured data bound (floor.data_bound) is itself under `wanted`
    and the arm came within one rate step of it: no placement could have met the target."""
    if arm is None or base is None or base <= 0:
        return Target(name, "n/a (a maximum was below the ramp's first step)", f">= {wanted:.2f}x",
                      "n/a")
    ratio = arm / base
    at_least = ">= " if censored else ""
    verdict = ("beat" if ratio >= wanted * resolution else "match" if ratio >= wanted - 1e-9
               else "miss")
    measured = f"{at_least}{ratio:.2f}x ({arm:.0f} vs {base:.0f} records/s)"
    if bound is not None and ratio > float(bound["bound"]) * resolution:
        # no placement can do that on these task loads: one arm's maximum was cut short (or
        # one's helped) by something else than placement, on a shared machine its noise
        b = float(bound["bound"])
        return Target(name, f"{measured}; the data's bound {b:.2f}x", f">= {wanted:.2f}x",
                      f"inconclusive (over the data's bound {b:.2f}x by more than a rate step: "
                      "a maximum was set by the machine's noise, not by placement)")
    if verdict == "miss" and bound is not None:
        b = float(bound["bound"])
        measured += f"; the data's bound {b:.2f}x"
        if b < wanted and ratio * resolution >= b:
            verdict = differs(
                f"no placement beats the default by more than {b:.2f}x on these task loads "
                f"(its busiest instance {bound['baseline_peak_pct']:.1f} % of the load, the "
                f"best placement's {bound['best_peak_pct']:.1f} %); {ratio:.2f}x is "
                f"{100 * ratio / b:.0f} % of it, within one rate step")
    return Target(name, measured, f">= {wanted:.2f}x", verdict)
