"""The stage frame (jobs/context.py): the order of its steps, the lock it holds around a stage's
body, a Delta conflict turned into a StageError, and the typed collect marker it reads once."""

from __future__ import annotations

import json
import threading
from datetime import datetime
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pipeline_kit import P1, tiny_job

from jobs.context import StageContext, run_stage
from jobs.errors import StageError, job_lock
from jobs.markers import CollectMarker, collect_marker_path, write_collect_marker
from schemas.config import JobConfig, Paths
from schemas.landing import RuntimeReport


def _ctx(paths: Paths, job: JobConfig) -> StageContext:
    return StageContext(job, P1, paths, cast(Any, None))  # no lake step: no session needed


def test_the_frame_checks_before_the_lock_and_holds_it_around_the_body(
        tmp_path: Path, config_file: Path) -> None:
    paths, job = Paths(tmp_path / "home"), tiny_job(config_file)
    seen: list[str] = []

    def body(ctx: StageContext) -> str:
        # the lock is held: another stage of the job gives up waiting for it
        def other() -> None:
            try:
                with job_lock(paths, ctx.job_id, "publish", wait_s=0.2):
                    seen.append("other ran")
            except StageError:
                seen.append("other refused")

        thread = threading.Thread(target=other)
        thread.start()
        thread.join(10)
        return "done"

    def check(ctx: StageContext) -> None:
        seen.append("checked")

    assert run_stage(_ctx(paths, job), "plan", body, check=check, tables=False) == "done"
    assert seen == ["checked", "other refused"]


def test_a_refused_check_leaves_the_lake_untouched(tmp_path: Path, config_file: Path) -> None:
    paths, job = Paths(tmp_path / "home"), tiny_job(config_file)

    def check(ctx: StageContext) -> None:
        raise StageError("bad budget", where="job", fix="fix it")

    with pytest.raises(StageError, match="bad budget"):
        run_stage(_ctx(paths, job), "plan", lambda c: None, check=check)
    assert not paths.lake.exists() and not (paths.home / "locks").exists()


def test_a_delta_conflict_is_a_stage_error_naming_the_stage(tmp_path: Path,
                                                              config_file: Path) -> None:
    paths, job = Paths(tmp_path / "home"), tiny_job(config_file)

    class ConcurrentAppendException(Exception):
        pass

    def body(ctx: StageContext) -> None:
        raise ConcurrentAppendException("Files were added by a concurrent update")

    with pytest.raises(StageError) as refused:
        run_stage(_ctx(paths, job), "publish", body, tables=False)
    assert "another writer changed a Delta table while publish of job 'tiny'" in str(refused.value)
    assert "run the publish again" in refused.value.fix

    def other(ctx: StageContext) -> None:
        raise ValueError("not a conflict")

    with pytest.raises(ValueError, match="not a conflict"):  # anything else passes through
        run_stage(_ctx(paths, job), "publish", other, tables=False)


def test_the_context_reads_the_marker_once_as_a_value(tmp_path: Path, config_file: Path) -> None:
    paths, job = Paths(tmp_path / "home"), tiny_job(config_file)
    collect_id = write_collect_marker(paths, job.job_id, P1, {"keygroup_stats": 3},
                                      {"keygroup_stats": 8}, RuntimeReport(2, ("n1", "n2")))
    ctx = _ctx(paths, job)
    marker = ctx.marker
    assert marker == CollectMarker(collect_id, {"keygroup_stats": 8}, {"keygroup_stats": 3},
                                   RuntimeReport(2, ("n1", "n2")))
    assert marker.wrote("keygroup_stats") and not marker.wrote("network_links")
    assert marker.runtime_nodes == frozenset({"n1", "n2"})
    collect_marker_path(paths, job.job_id, P1).unlink()
    assert ctx.marker is marker  # read once: the stage sees one collect throughout
    assert _ctx(paths, job).marker is None


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=8)


@given(st.dictionaries(st.sampled_from(["collect_id", "rows", "versions", "runtime", "x"]), _json))
def test_any_document_is_a_marker_or_none_never_an_error(document: dict[str, Any]) -> None:
    try:
        marker = CollectMarker.from_json(document)
    except (TypeError, ValueError):
        # counts that are not numbers: a damaged marker must read as none, never raise
        pytest.fail(f"from_json raised on {json.dumps(document)}")
    if marker is not None:
        assert marker.collect_id == document["collect_id"]
        assert all(isinstance(v, int) for v in marker.rows.values())


def test_the_window_and_stamp_of_a_period(tmp_path: Path, config_file: Path) -> None:
    ctx = _ctx(Paths(tmp_path), tiny_job(config_file))
    assert ctx.stamp == "2026-01-01T00:05:00Z" and ctx.start == datetime.fromisoformat(
        "2026-01-01T00:00:00+00:00")
    assert ctx.window == "[2026-01-01T00:00:00Z, 2026-01-01T00:05:00Z)"
    assert ctx.cmd("validate") == "reconf validate --job tiny --period-end 2026-01-01T00:05:00Z"


def test_a_partial_assignment_the_runtime_reported_is_kept_by_the_marker(
        tmp_path: Path, config_file: Path) -> None:
    paths, job = Paths(tmp_path / "home"), tiny_job(config_file)
    write_collect_marker(paths, job.job_id, P1, {}, {},
                         RuntimeReport(3, ("n1",), {"op0-kg000": "n1"}))
    marker = _ctx(paths, job).marker
    assert marker is not None and marker.runtime is not None
    assert dict(marker.runtime.assignment or {}) == {"op0-kg000": "n1"}


def test_recording_computes_the_node_loads_once(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """moves.csv, nodes.csv and the load chart share one `NodeLoads` (before, after)."""

    import jobs.tracking.audit_trail as trail
    import jobs.tracking.charts as charts
    from placement.common import make_plan
    from placement.model import ClusterState, KeyGroup, Node, SolverStatus

    calls: list[int] = []
    real = trail.node_loads

    def counted(state: ClusterState, assignment: Any) -> dict[str, float]:
        calls.append(1)
        return real(state, assignment)

    monkeypatch.setattr(trail, "node_loads", counted)
    monkeypatch.setattr(charts, "node_loads", counted)
    state = ClusterState(nodes=(Node("a", 1.0), Node("b", 1.0)),
                         keygroups=(KeyGroup("k1", "op", 30.0), KeyGroup("k2", "op", 10.0)),
                         assignment={"k1": "a", "k2": "a"})
    plan = make_plan(state, {"k1": "a", "k2": "b"}, status=SolverStatus.HEURISTIC,
                     lower_bound=None)
    loads = trail.NodeLoads.of(state, plan)
    assert len(calls) == 2 and loads.after == {"a": 30.0, "b": 10.0}
    moves = trail.explain_moves(state, plan, loads)
    nodes = trail.node_rows(state, plan, loads)
    charts.load_chart(state, plan, tmp_path / "loads.png", (loads.before, loads.after))
    assert len(calls) == 2  # nothing computed them again
    assert moves[0]["dst_load_after"] == 10.0 and nodes[1]["load_after"] == 10.0
    assert (tmp_path / "loads.png").stat().st_size > 0
