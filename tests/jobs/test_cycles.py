"""The cycle gate's decision (jobs/cycles.py `decide`) and the per-period record it reads.

Every case of a live job's history the gate must get right: a failed period holds the next
cycle (whose re-run must find the slot free), a held run is looked through, a lost, published or
deliberately unpublished period lets the next go on, and Airflow's success always wins."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jobs.cycles import (
    CycleState,
    Decision,
    Outcome,
    cycle_path,
    decide,
    read_outcome,
    record_outcome,
)
from schemas.config import Paths
from schemas.landing import format_period_end

T0 = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
SPL = timedelta(minutes=5)


def _period(k: int) -> datetime:
    return T0 + k * SPL


def _outcome(k: int, state: CycleState, *, stage: str | None = None,
             behind: int | None = None) -> Outcome:
    return Outcome(format_period_end(_period(k)), state, f"{state} detail", "2026-01-01T00:00:00",
                   f"run-{k}", stage, None if behind is None else format_period_end(_period(behind)))


def _gate(previous: int | None, runs: dict[int, str], outcomes: dict[int, Outcome]
          ) -> Decision:
    """decide() for the run after `previous`, with Airflow's run states and the records."""
    index = {_period(k): k for k in set(runs) | set(outcomes) | {previous or 0}}
    return decide(None if previous is None else _period(previous),
                  None if previous is None else runs.get(previous),
                  lambda p: outcomes.get(index.get(p, -1)),
                  lambda p: runs.get(index.get(p, -1)))


def test_the_first_run_and_a_successful_previous_run_go_on() -> None:
    assert _gate(None, {}, {}).go
    assert _gate(1, {1: "success"}, {1: _outcome(1, CycleState.PUBLISHED)}).go
    # an operator marked a failed run success: Airflow's state wins over the record
    assert _gate(1, {1: "success"}, {1: _outcome(1, CycleState.FAILED, stage="validate")}).go


def test_a_failed_period_holds_the_next_cycle_naming_the_stage() -> None:
    decision = _gate(1, {1: "failed"}, {1: _outcome(1, CycleState.FAILED, stage="validate")})
    assert not decision.go and decision.behind == _period(1) and not decision.rerunning
    assert "validate failed" in decision.why and format_period_end(_period(1)) in decision.why


@pytest.mark.parametrize("record", [None, CycleState.STARTED])
def test_a_run_that_crashed_without_a_record_of_its_end_holds_too(
        record: CycleState | None) -> None:
    outcomes = {} if record is None else {1: _outcome(1, record)}
    decision = _gate(1, {1: "failed"}, outcomes)
    assert not decision.go and decision.behind == _period(1)
    assert "without a record" in decision.why


@pytest.mark.parametrize("settled", [CycleState.LOST, CycleState.PUBLISHED,
                                     CycleState.NOT_PUBLISHED])
def test_a_failed_run_whose_period_is_settled_lets_the_next_go_on(settled: CycleState) -> None:
    """Never landed (missed_period fails the run), given up by an operator, or published and
    then failed (a later task): nothing to wait for."""
    assert _gate(1, {1: "failed"}, {1: _outcome(1, settled)}).go


def test_held_runs_are_looked_through_to_the_period_they_wait_for() -> None:
    runs = {1: "failed", 2: "failed", 3: "failed"}
    outcomes = {1: _outcome(1, CycleState.FAILED, stage="collect"),
                2: _outcome(2, CycleState.HELD, behind=1), 3: _outcome(3, CycleState.HELD, behind=1)}
    decision = _gate(3, runs, outcomes)
    assert not decision.go and decision.behind == _period(1)  # still behind the failed one
    # the operator re-ran period 1 (it published) or gave it up: the next live period goes on
    assert _gate(3, {**runs, 1: "success"}, outcomes).go
    assert _gate(3, runs, {**outcomes, 1: _outcome(1, CycleState.LOST)}).go


def test_a_period_being_run_again_holds_the_next_so_the_slot_is_free() -> None:
    outcomes = {1: _outcome(1, CycleState.STARTED), 2: _outcome(2, CycleState.HELD, behind=1)}
    for state in ("queued", "running"):
        decision = _gate(2, {1: state, 2: "failed"}, outcomes)
        assert not decision.go and decision.rerunning and decision.behind == _period(1)


def test_a_held_run_whose_period_has_no_run_left_goes_by_the_record() -> None:
    outcomes = {2: _outcome(2, CycleState.HELD, behind=1)}
    assert _gate(2, {2: "failed"}, outcomes).go  # no run and no record of period 1: nothing known
    failed = {**outcomes, 1: _outcome(1, CycleState.FAILED, stage="plan")}
    assert not _gate(2, {2: "failed"}, failed).go


_STATES = st.sampled_from(["success", "failed"])
_RECORDS = st.sampled_from([None, *CycleState])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_STATES, _RECORDS), min_size=1, max_size=8))
def test_the_gate_goes_on_exactly_when_the_nearest_run_that_was_not_held_is_settled(
        history: list[tuple[str, CycleState | None]]) -> None:
    """For any finished history: held runs (each behind the nearest earlier run that was not
    held) are transparent; the cycle goes on iff that run succeeded, or its record says it is
    settled, or nothing at all is known of it."""
    runs: dict[int, str] = {}
    outcomes: dict[int, Outcome] = {}
    anchor: int | None = None
    for k, (state, record) in enumerate(history, start=1):
        runs[k] = state
        if record is CycleState.HELD and anchor is not None:
            outcomes[k] = _outcome(k, CycleState.HELD, behind=anchor)
            continue
        if record is not None and record is not CycleState.HELD:
            outcomes[k] = _outcome(k, record, stage="collect")
        anchor = k
    decision = _gate(len(history), runs, outcomes)
    if anchor is None:  # only held runs whose anchor is unknown: nothing to wait for
        assert decision.go
        return
    kept = outcomes.get(anchor)
    expected = runs[anchor] == "success" or (kept is not None and kept.state.settled)
    assert decision.go == expected, (history, decision)
    if not decision.go:
        assert decision.behind == _period(anchor)


def test_the_record_keeps_the_newest_outcome_and_the_history(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    assert read_outcome(paths, "demo", T0) is None
    record_outcome(paths, "demo", T0, CycleState.STARTED, "no earlier run", run_id="r1")
    record_outcome(paths, "demo", T0, CycleState.FAILED, "bad rows\nmore", run_id="r1",
                   stage="validate")
    done = record_outcome(paths, "demo", T0, CycleState.PUBLISHED, "v3 (published)", run_id="r2")
    assert read_outcome(paths, "demo", T0) == done
    document = json.loads(cycle_path(paths, "demo", T0).read_text())
    assert [h["state"] for h in document["history"]] == ["started", "failed"]
    assert document["history"][1]["stage"] == "validate"
    assert done.period_end == "2026-01-01T00:05:00Z" and done.stage is None


def test_a_damaged_record_is_no_record(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    path = cycle_path(paths, "demo", T0)
    path.parent.mkdir(parents=True)
    for text in ("{", "[]", '{"current": {"state": "exploded"}}', '{"current": 3}'):
        path.write_text(text)
        assert read_outcome(paths, "demo", T0) is None, text
    # and a new record replaces it
    record_outcome(paths, "demo", T0, CycleState.LOST, "never landed")
    assert read_outcome(paths, "demo", T0).state is CycleState.LOST  # type: ignore[union-attr]
