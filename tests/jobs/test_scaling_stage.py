"""Algorithm 1 in the pipeline: scale-out, then scale-in, drained nodes terminated.

The tiny job with a `[jobs.tiny.scaling]` table, through the real stages (collect -> validate ->
plan -> publish) and the synthetic runtime stand-in, which applies every manifest. The first
config (target 50 %) scales out; the second (target 95 %, as if the load had dropped) scales in.
Each cycle the runtime must accept the manifest (it refuses to terminate a busy node), and no key
group may be lost or duplicated.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from mlflow import MlflowClient
from pipeline_kit import CONFIG, JOB_ID, all_keygroups, apply_latest, land, period, tiny_job

from jobs.run import run_collect, run_plan, run_publish, run_validate
from runtime.synthetic import load_state
from schemas.manifest import read_manifest

pytestmark = pytest.mark.spark


def _config(tmp_path: Path, name: str, target: float) -> Path:
    path = tmp_path / name
    path.write_text(CONFIG + f"""
[jobs.{JOB_ID}.scaling]
target_utilisation = {target}
min_nodes = 1
max_nodes = 5
cooldown_cycles = 0
max_ld = 40
""")
    return path


def test_pipeline_scales_out_then_in_and_terminates_only_empty_nodes(home, tmp_path, monkeypatch):
    paths = home
    out_cfg, in_cfg = _config(tmp_path, "out.toml", 0.5), _config(tmp_path, "in.toml", 0.95)
    decisions: list[str] = []
    terminated: list[str] = []
    nodes_seen: list[list[str]] = []
    for n, cfg in enumerate([out_cfg, in_cfg, in_cfg, in_cfg], start=1):
        monkeypatch.setenv("RECONF_CONFIG", str(cfg))
        job = tiny_job(cfg)
        assert job.scaling is not None and job.scaling.target_utilisation in (0.5, 0.95)
        end = period(n)
        land(paths, end, job)
        run_collect(JOB_ID, end)
        run_validate(JOB_ID, end)
        planned = run_plan(JOB_ID, end)
        published = run_publish(JOB_ID, end)
        assert published.version is not None
        manifest = read_manifest(paths.published, JOB_ID, published.version)
        scaling = json.loads(json.dumps(planned.plan_json["scaling"]))
        decisions.append(scaling["decision"])
        assert manifest.scaling.reason == scaling["reason"] and scaling["reason"]
        assert set(manifest.scaling.nodes_to_add) == set(scaling["nodes_to_add"])
        assert set(manifest.scaling.nodes_to_mark) == set(scaling["nodes_to_mark"])
        # never terminate a node that still holds a key group; nothing lost or duplicated
        assert not set(manifest.scaling.nodes_to_terminate) & set(manifest.assignment.values())
        assert set(manifest.assignment) == all_keygroups()
        # the runtime accepts the manifest and runs exactly its nodes
        result = apply_latest(paths, job)
        assert result.status == "applied", result.reason
        state = load_state(paths.runtime, JOB_ID)
        assert state is not None
        assert set(manifest.assignment.values()) <= set(state.nodes)
        assert not set(terminated + list(manifest.scaling.nodes_to_terminate)) & set(state.nodes)
        terminated += manifest.scaling.nodes_to_terminate
        nodes_seen.append(sorted(state.nodes))

    assert decisions[0] == "out" and "in" in decisions[1:], decisions
    assert "node-03" in nodes_seen[0]  # node-<nn> numbering continues
    assert terminated, (decisions, nodes_seen)
    client = MlflowClient(tracking_uri=paths.mlflow_uri)
    experiment = client.get_experiment_by_name(JOB_ID)
    assert experiment is not None
    runs = client.search_runs([experiment.experiment_id])
    tagged = {r.data.tags.get("reconf.scaling.decision") for r in runs}
    assert {"out", "in"} <= tagged
    assert any("scale-out" in r.data.tags.get("reconf.scaling.reason", "") for r in runs)
