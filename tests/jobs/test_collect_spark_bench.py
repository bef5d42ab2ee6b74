"""`reconf bench collect-spark`'s streamed landing and the Spark rows of `reconf bench cycle`:
the generated period is a valid landing of the size it says, and the documented commands parse."""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any, cast

import pyarrow.compute as pc
import pyarrow.parquet as pq
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.collect_spark import JOB, PERIOD_END, land_streamed
from jobs.collect.engine import landed_samples
from jobs.collect.native import collect_frames
from jobs.collect.stage import check_landing
from schemas.config import Paths
from schemas.landing import EDGES, KEYGROUPS, NODES
from schemas.tables import COMM_STATS


class _Job:
    job_id = JOB
    spl = timedelta(minutes=5)


@settings(max_examples=5, deadline=None)
@given(samples=st.integers(1, 5_000), fanout=st.integers(1, 6), per_pair=st.integers(1, 12))
def test_the_streamed_landing_is_a_valid_period_of_the_size_it_reports(
        tmp_path_factory, samples: int, fanout: int, per_pair: int) -> None:
    home = tmp_path_factory.mktemp("home")
    landed = land_streamed(home / "landing", JOB, PERIOD_END, samples, fanout=fanout,
                           per_pair=per_pair, nodes=3)
    assert landed.edge_samples >= samples and landed.pairs == landed.keygroups * fanout
    files = check_landing(Paths(home), JOB, PERIOD_END)  # complete, the contract's types
    assert landed_samples(f for kind in files.values() for f in kind) == landed.samples
    got = collect_frames(cast(Any, _Job), PERIOD_END, files, {}, landed.where)  # no sample refused
    assert got.groups == {KEYGROUPS: landed.keygroups, EDGES: landed.pairs, NODES: 3}
    edges = pq.read_table(files[EDGES][0])
    assert (pc.sum(got.tables[COMM_STATS.name]["tuples"]).as_py()
            == pc.sum(edges["tuples"]).as_py())


def test_the_documented_command_lines_parse() -> None:
    """docs/benchmarks.md's and docs/operations.md's lines for collect-spark and the Spark rows."""
    from bench.collect_spark import add_arguments as collect_arguments
    from bench.cycle import MODES
    from bench.cycle import add_arguments as cycle_arguments

    parser = argparse.ArgumentParser()
    collect_arguments(parser)
    got = parser.parse_args(["--sizes", "1e6", "1e7", "1e8", "--native-max", "1e7"])
    assert [int(s) for s in got.sizes] == [10**6, 10**7, 10**8] and got.native_max == 1e7
    assert got.engines == ["native", "spark"]
    got = parser.parse_args(["--master", "spark://127.0.0.1:7077"])
    assert got.master == "spark://127.0.0.1:7077" and got.sizes is None
    parser = argparse.ArgumentParser()
    cycle_arguments(parser)
    got = parser.parse_args(["--sizes", "1000", "10000", "--modes", "worker+native",
                             "worker+connect", "worker+cluster", "--no-fleet", "--targets",
                             "t10k"])
    assert got.modes == ["worker+native", "worker+connect", "worker+cluster"]
    assert {"process+cluster", "worker+cluster", "process+connect"} <= set(MODES)
    got = parser.parse_args(["--modes", "worker+cluster", "--master", "spark://127.0.0.1:7077"])
    assert got.master == "spark://127.0.0.1:7077"
