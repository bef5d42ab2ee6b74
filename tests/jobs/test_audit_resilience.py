"""`reconf audit` reads a plan's resilience back from the run's `<name>_after/_before` metrics."""

from __future__ import annotations

import pytest

from reconf.audit import _resilience


def test_resilience_metrics_are_paired_and_the_interval_left_out() -> None:
    metrics = {"feasible_set_ratio_after": 0.75, "feasible_set_ratio_before": 0.5,
               "feasible_set_ratio_ci_after": 0.01, "headroom_all_after": 1.8,
               "load_distance_after": 2.0}
    got = _resilience(metrics)
    assert got == {"feasible_set_ratio": {"before": 0.5, "after": 0.75},
                   "headroom_all": {"before": None, "after": 1.8}}
    assert _resilience({"load_distance_after": 1.0}) is None


@pytest.mark.parametrize("name", ["plane_distance_ratio", "mmad_bound", "headroom_min"])
def test_every_resilience_metric_is_shown(name: str) -> None:
    assert _resilience({f"{name}_after": 1.0}) == {name: {"before": None, "after": 1.0}}
