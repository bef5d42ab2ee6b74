"""Validation bounds what the planner computes with, and what its ids pass through.

Huge but finite numbers (a source rate of 1e308 overflows Herding's costs to NaN) and ids that
a later consumer refuses (MLflow refuses a metric named after node ``node#07``) are refused at
validate, naming the row. The bounds live in schemas/limits.py and in the suites' JSON; the
sweep below keeps the two in agreement."""

from __future__ import annotations

import json
import re
from typing import Any

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mlflow.utils.validation import path_not_unique, validate_param_and_metric_name
from period_frames import KEYGROUPS, NODES, clean_edges, clean_keygroups, clean_nodes

from jobs.validate.suites import (
    SUITE_DIR,
    ValidationReport,
    validate_facets,
    validate_stats,
    validate_streams,
)
from schemas import limits
from schemas.manifest import Manifest

SUITES = sorted(SUITE_DIR.glob("*.json"))


def _between(suite: dict[str, Any]) -> list[dict[str, Any]]:
    return [e for e in suite["expectations"] if e["type"] == "expect_column_values_to_be_between"]


@pytest.mark.parametrize("path", SUITES, ids=[p.stem for p in SUITES])
def test_every_upper_bound_is_a_documented_limit(path: Any) -> None:
    """No `max_value` is float64's maximum any more: each is a schemas/limits.py bound, named in
    the rule's words."""
    for e in _between(json.loads(path.read_text())):
        top = e["kwargs"].get("max_value")
        if top is None or e["kwargs"]["column"] == "nodes_of_keygroup":
            continue  # bandwidth: +inf means not limited; nodes_of_keygroup: exactly 1
        name = re.search(r"schemas/limits\.py (\w+)", e["meta"]["rule"])
        assert name, e["meta"]["rule"]
        assert getattr(limits, name.group(1)) == top <= 1e18, (path.stem, e["kwargs"])


@pytest.mark.parametrize("path", SUITES, ids=[p.stem for p in SUITES])
def test_every_id_column_has_the_id_rule(path: Any) -> None:
    suite = json.loads(path.read_text())
    ids = {"keygroup", "node", "source", "stream", "operator", "src_keygroup", "dst_keygroup",
           "a", "b"}
    columns = {e["kwargs"].get("column") for e in suite["expectations"]
               if e["type"] == "expect_column_values_to_not_be_null"} & ids
    checked = {e["kwargs"]["column"] for e in suite["expectations"]
               if e["type"] == "expect_column_values_to_match_regex"
               and e["kwargs"]["regex"] == limits.ID_PATTERN.pattern}
    assert columns and columns == checked, path.stem


def _stats(frames_change: dict[str, tuple[int, str, Any]]) -> ValidationReport:
    frames = {"keygroups": clean_keygroups(), "edges": clean_edges(), "nodes": clean_nodes()}
    for table, (row, column, value) in frames_change.items():
        frame = frames[table]
        if isinstance(value, float) and frame[column].dtype.kind == "i":
            frames[table] = frame = frame.astype({column: "float64"})
        frame.loc[row, column] = value
    return validate_stats(frames["keygroups"], frames["edges"], frames["nodes"],
                          expected_keygroups=KEYGROUPS, known_nodes=NODES)


@pytest.mark.parametrize(("table", "column", "value", "named"), [
    ("keygroups", "load_pct", 1e300, "keygroup=kg-003"),
    ("keygroups", "state_bytes", 1e300, "keygroup=kg-003"),
    ("edges", "tuples_per_s", 1e308, "src_keygroup=kg-003"),
    ("nodes", "capacity", 1e300, "node=node-a"),
    ("nodes", "utilisation_pct", 1e300, "node=node-a"),
])
def test_huge_but_finite_stats_are_refused_naming_the_row(
        table: str, column: str, value: float, named: str) -> None:
    report = _stats({table: (3 if table != "nodes" else 0, column, value)})
    assert not report.success
    text = report.summary()
    assert named in text and "schemas/limits.py" in text and f"{column}" in text


def _sources(rate: float) -> pd.DataFrame:
    return pd.DataFrame({"job_id": "q", "period_end": pd.Timestamp("2026-01-01 00:05"),
                         "source": ["dest:ATL", "carrier:UA"], "tuples_per_s": [rate, 5.0],
                         "bytes_per_s": [10.0, 10.0]})


def _subs(node: str = "node-00") -> pd.DataFrame:
    return pd.DataFrame({"job_id": "q", "period_end": pd.Timestamp("2026-01-01 00:05"),
                         "keygroup": ["q1", "q1"], "node": [node, node],
                         "source": ["dest:ATL", "carrier:UA"]})


def test_a_source_rate_of_1e308_is_refused_naming_the_source() -> None:
    assert validate_facets(_sources(1e12), _subs(), running_units={"q1"},
                           known_nodes={"node-00"}).success  # the bound itself passes
    report = validate_facets(_sources(1e308), _subs(), running_units={"q1"},
                             known_nodes={"node-00"})
    assert not report.success
    assert "source=dest:ATL tuples_per_s=1e+308" in report.summary()


def test_a_stream_rate_of_1e300_is_refused_naming_the_stream() -> None:
    streams = pd.DataFrame({"job_id": "s", "period_end": pd.Timestamp("2026-01-01 00:05"),
                            "stream": ["in0", "in1"], "tuples_per_s": [1e300, 10.0]})
    report = validate_streams(streams, None, declared_streams=["in0", "in1"],
                              running_units={"u"})
    assert not report.success and "stream=in0 tuples_per_s=1e+300" in report.summary()


def test_a_node_id_mlflow_refuses_is_refused_at_validate() -> None:
    report = _stats({"keygroups": (0, "node", "node#07"), "nodes": (0, "node", "node#07")})
    assert not report.success
    text = report.summary()
    assert "keygroup_stats.node" in text and "node_stats.node" in text and "node#07" in text
    assert "expect_column_values_to_match_regex" in text and "rename" in text
    facets = validate_facets(_sources(1.0), _subs("node#07"), running_units={"q1"},
                             known_nodes={"node#07"})
    assert not facets.success and "subscriptions.node" in facets.summary()


@settings(deadline=None)
@given(st.from_regex(limits.ID_PATTERN, fullmatch=True))
def test_every_accepted_id_passes_mlflow_names_and_the_manifest(unit: str) -> None:
    """What validate accepts, MLflow accepts as (part of) a param, metric or tag name, and the
    manifest round-trips."""
    assert limits.id_problem(unit) is None
    for name in (unit, f"utilisation.{unit}", f"load_{unit}"):
        assert validate_param_and_metric_name(name) and not path_not_unique(name), name
    m = Manifest.create(job_id="j", version=1, period_end="2026-01-01T00:05:00Z", plan_id="p",
                        assignment={unit: unit})
    assert Manifest.from_json(m.to_json(), "m").assignment == {unit: unit}


@pytest.mark.parametrize("bad", ["node#07", "a b", "x/y", "-lead", "", "é" * 3, "n" * 201])
def test_an_id_problem_is_said_in_words(bad: str) -> None:
    assert limits.id_problem(bad)
