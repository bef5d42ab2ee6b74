"""`reconf audit`'s execution lines: a version's applied waves (time, bytes, rate, failures), the
schedule's byte rate and expected durations, read from the report dict the MLflow run gives."""

from __future__ import annotations

from placement.model import ClusterState, KeyGroup, Move, Node
from placement.waves import plan_waves
from reconf.audit_execution import execution_lines
from runtime.execution import Execution, WaveRun
from schemas.schedule import Schedule, ScheduledMove, Wave, WaveLimits


def test_a_failed_wave_shows_its_units_and_every_wave_its_time_bytes_and_rate() -> None:
    ex = Execution("j", 3, 3, (WaveRun(1, ("k1", "k2"), 4000.0, 2.0, (), 0.5),
                               WaveRun(2, ("k3",), 1000.0, 0.5, ("k4",), 0.5)),
                   "failed", "2026-01-01T00:00:00+00:00", 2000.0)
    lines = execution_lines({"applied": {**ex.to_dict(), "summary": ex.summary()}})
    assert lines[0].startswith("  applied by the runtime: v3: wave 2 of 3, 3 unit(s) moved, "
                               "5000 state bytes, 2.50 s, paced at most 2000 B/s")
    assert "failed (1 unit(s) could not move: k4)" in lines[0]
    assert lines[1:] == ["    wave 1: 2 moved, 4000 B, 2.00 s, 2000 B/s",
                         "    wave 2: 1 moved, 1000 B, 0.50 s, 2000 B/s, FAILED: k4"]


def test_the_schedule_line_shows_the_rate_and_each_waves_least_time() -> None:
    waves = (Wave((ScheduledMove("k1", "a", "b", 300.0),), 50.0),
             Wave((ScheduledMove("k2", "a", "c", 100.0),), 40.0))
    rated = Schedule.sealed(waves, WaveLimits(max_bytes_per_second=200.0), "sha256:x")
    lines = execution_lines({"schedule": rated.summary()})
    assert lines[0].endswith(", rate 200 B/s (at least 2.00 s)")
    assert lines[1].endswith("peak 50.0 %, at least 1.50 s")
    plain = Schedule.sealed(waves, WaveLimits(), "sha256:x")
    assert all("at least" not in line and "rate" not in line
               for line in execution_lines({"schedule": plain.summary()}))


def test_unset_schedule_limits_read_none_not_pythons_none() -> None:
    """The execution section's defaults leave per-wave, byte and ceiling limits unset; the line
    says "none" for each, and a set ceiling keeps its unit."""
    waves = (Wave((ScheduledMove("k1", "a", "b", 300.0),), 50.0),)
    plain = execution_lines({"schedule": Schedule.sealed(waves, WaveLimits(), "sha256:x")
                             .summary()})[0]
    assert "None" not in plain
    assert "per wave none, bytes none, ceiling none" in plain
    capped = Schedule.sealed(waves, WaveLimits(ceiling_pct=90.0), "sha256:x").summary()
    assert "ceiling 90.0 %" in execution_lines({"schedule": capped})[0]


def _full_pair() -> ClusterState:
    """n0 and n1 at 90 % each (two units of 45), n2 at 10 %."""
    kgs = (*(KeyGroup(f"k{i}", "op", 45.0, state_bytes=100) for i in range(4)),
           KeyGroup("k4", "op", 10.0, state_bytes=100))
    return ClusterState((Node("n0"), Node("n1"), Node("n2")), kgs,
                        {"k0": "n0", "k1": "n0", "k2": "n1", "k3": "n1", "k4": "n2"})


def test_a_swap_between_two_full_nodes_is_over_the_ceiling_in_flight_not_by_its_target() -> None:
    """Swapping k0 and k2 leaves both nodes at 90 % under a 95 % ceiling: the target keeps it,
    only the moving unit counted on both nodes breaks it, and the audit says so."""
    state = _full_pair()
    swap = plan_waves(state, [Move("k0", "n0", "n1", 0.0), Move("k2", "n1", "n0", 0.0)],
                      WaveLimits(ceiling_pct=95.0))
    lines = execution_lines({"schedule": swap.summary()})
    over = [line for line in lines[1:] if "OVER the ceiling" in line]
    assert len(over) == 1 and lines[1] == over[0], lines  # the second move then fits
    for line in over:
        assert "the plan's target breaks it" not in line, line
        assert "while the wave runs: the plan's target keeps it" in line, line
        assert "two full nodes swap units" in line, line


def test_a_target_over_the_ceiling_is_said_to_break_it() -> None:
    state = _full_pair()
    onto = plan_waves(state, [Move("k4", "n2", "n0", 0.0)], WaveLimits(ceiling_pct=95.0))
    lines = execution_lines({"schedule": onto.summary()})
    assert lines[1].endswith("(OVER the ceiling: the plan's target breaks it)"), lines


def test_a_schedule_read_back_without_its_causes_names_both_possible_ones() -> None:
    """A summary logged before the cause was recorded (or rebuilt from a manifest) says what
    the docs say: the target breaks it, or full nodes swap units."""
    waves = (Wave((ScheduledMove("k1", "a", "b", 300.0),), 99.0, True),)
    summary = Schedule.sealed(waves, WaveLimits(ceiling_pct=95.0), "sha256:x").summary()
    line = execution_lines({"schedule": summary})[1]
    assert "the plan's target breaks it, or two full nodes swap units" in line, line
