"""`reconf bench cycle`'s targets table: verdicts, growth exponents and the targets' jobs."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.cycle import _config
from bench.cycle.targets import TARGETS, exponent, growth, print_targets, verdicts
from schemas.config import Paths, resolve_job


@given(st.floats(0.2, 3.0), st.floats(1e-3, 1e3))
def test_the_exponent_of_a_power_law_is_its_power(b: float, a: float) -> None:
    points = [(n, a * n**b) for n in (1e3, 1e4, 1e5)]
    fitted = exponent(points)
    assert fitted is not None and math.isclose(fitted, b, abs_tol=1e-9)


def test_no_exponent_from_one_size() -> None:
    assert exponent([(1e3, 2.0)]) is None and exponent([(1e3, 2.0), (1e3, 3.0)]) is None


def _row(job: str, units: int, total: float, **extra: float) -> dict[str, object]:
    layers = {"read": total / 4, "ge": total / 8, "mlflow": total / 8, "solver": 0.1}
    steps = dict.fromkeys(("land", "collect", "validate", "plan", "publish"), total / 5)
    return {"mode": "worker+native", "job": job, "units": units, "jobs_at_once": 1,
            "total": total, "layers": layers, **steps, **extra}


def test_growth_fits_each_step_over_the_growth_jobs_only() -> None:
    rows = [_row("kg1000", 1000, 2.0, peak_mib=200.0), _row("kg10000", 10000, 20.0, peak_mib=400.0),
            _row("t10k", 10000, 500.0)]  # a target is not a growth job
    fit = growth(rows)["worker+native"]
    assert fit["sizes"] == [1000, 10000]
    assert math.isclose(fit["exponents"]["total"], 1.0)
    assert math.isclose(fit["exponents"]["read"], 1.0)
    assert math.isclose(fit["exponents"]["peak_mib"], math.log10(2.0))


def test_each_limit_of_a_target_gets_its_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    t32k = next(t for t in TARGETS if t.name == "t32k")
    assert verdicts(t32k, {"total": 20.0, "gap_pct": 0.95, "peak_mib": 5000.0}) == {
        "cycle": "beat", "gap": "match", "memory": "miss"}
    assert verdicts(t32k, {"total": 31.0, "gap_pct": float("nan"), "peak_mib": 100.0}) == {
        "cycle": "miss", "gap": "miss", "memory": "beat"}
    out = print_targets([_row("t10k", 10000, 9.5, gap_pct=0.5, peak_mib=300.0)])
    text = capsys.readouterr().out
    assert "cycle match" in text and "not run" in text
    assert [o["run"] for o in out] == [True] + [False] * (len(TARGETS) - 1)


def test_a_target_run_in_two_modes_is_judged_in_each(capsys: pytest.CaptureFixture[str]) -> None:
    """`--modes worker+connect worker+cluster --targets t10k`: one row per mode, each judged."""
    rows = [{**_row("t10k", 10000, 19.6), "mode": "worker+connect"},
            {**_row("t10k", 10000, 8.0), "mode": "worker+cluster"}]
    out = [o for o in print_targets(rows) if o["run"]]
    text = capsys.readouterr().out
    assert [(o["mode"], o["verdicts"]["cycle"]) for o in out] == [
        ("worker+connect", "miss"), ("worker+cluster", "beat")]
    assert "worker+connect" in text and "worker+cluster" in text


def test_the_targets_and_growth_jobs_are_valid_jobs_of_their_sizes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reconf.settings import make_source
    from runtime.synthetic import SyntheticJob

    config = tmp_path / "jobs.toml"
    config.write_text(_config((1000, 100_000), 1, fanout=16, targets=tuple(t.name for t in TARGETS)))
    monkeypatch.setenv("RECONF_CONFIG", str(config))
    for target in TARGETS:
        job = resolve_job(target.name)
        spec = make_source(job, Paths(tmp_path)).spec  # type: ignore[attr-defined]
        assert (len(spec.keygroups), spec.nodes) == (target.units, target.nodes)
        # a Herding target's queries read sources and send to no one; the others keep top pairs
        assert (spec.fanout, spec.reads) == ((0, target.reads) if target.reads else (16, 0))
        assert job.strategy == target.strategy
    assert any(t.reads and t.strategy.startswith("herding") for t in TARGETS)
    source = make_source(resolve_job("kg100000"), Paths(tmp_path))
    assert isinstance(source, SyntheticJob) and len(source.spec.keygroups) == 100_000


def test_the_documented_command_lines_parse() -> None:
    """docs/benchmarks.md's `reconf bench cycle` lines for the targets and the growth."""
    import argparse

    from bench.cycle import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    first = parser.parse_args(["--sizes", "1000", "10000", "--modes", "worker+native",
                               "--no-fleet", "--targets", "t10k"])
    assert (first.sizes, first.targets, first.no_fleet, first.fanout) == (
        [1000, 10000], ["t10k"], True, 16)
    second = parser.parse_args(["--sizes", "100000", "--modes", "worker+native", "--no-fleet",
                                "--targets", "t32k", "t100k", "--fanout", "0"])
    assert second.targets == ["t32k", "t100k"] and second.fanout == 0
    herding = parser.parse_args(["--no-growth", "--no-fleet", "--modes", "worker+native",
                                 "--targets", "t100k-herding"])
    assert herding.targets == ["t100k-herding"] and herding.no_growth and herding.no_fleet
