"""One error base for refused input: every kind derives from it and keeps what, where and fix."""

from __future__ import annotations

import pickle

import pytest
from hypothesis import given
from hypothesis import strategies as st

from jobs.errors import StageError
from placement.common import StrategyInputError
from placement.params import ParamsError
from placement.rod.model import LoadModelError
from placement.sprawl.topology import TopologyError
from reconf.audit import AuditError
from runtime.kafka_streams.broker import BrokerFailed
from runtime.kafka_streams.build import BuildMissing
from runtime.kafka_streams.cluster import NotReached
from runtime.replay.datasets import DatasetMissing
from schemas.config import ConfigError
from schemas.errors import ReconfError
from schemas.landing import parse_period_end
from schemas.manifest import ManifestError
from schemas.periods import PeriodError

KINDS = (StageError, PeriodError, ConfigError, ManifestError, ParamsError, StrategyInputError,
         TopologyError, LoadModelError, AuditError, DatasetMissing, BrokerFailed, BuildMissing,
         NotReached)


@pytest.mark.parametrize("kind", KINDS)
def test_every_refusal_is_one_type(kind: type[Exception]) -> None:
    assert issubclass(kind, ReconfError)
    # the kinds that were ValueErrors stay ValueErrors (callers catch them so); a stage's is not
    assert issubclass(kind, ValueError) == (kind is not StageError)


texts = st.text(st.characters(exclude_categories=["Cs"]), max_size=40)


@given(texts, texts, texts)
def test_what_where_fix_render_and_survive_pickling(what: str, where: str, fix: str) -> None:
    for error in (StageError(what, where=where, fix=fix), PeriodError(what, where=where, fix=fix),
                  StrategyInputError(what, where=where, fix=fix)):
        assert str(error) == f"{what}\n  where: {where}\n  fix:   {fix}"
        back = pickle.loads(pickle.dumps(error))
        assert type(back) is type(error) and str(back) == str(error)
        assert (back.what, back.where, back.fix) == (what, where, fix)


def test_a_message_that_names_its_place_is_the_message() -> None:
    error = ConfigError("jobs.toml: jobs.a.spl: must be a positive duration, got 0")
    assert str(error) == error.what and error.where == "" and error.fix == ""
    assert str(pickle.loads(pickle.dumps(error))) == str(error)


def test_a_period_end_that_is_no_instant_is_a_period_error() -> None:
    with pytest.raises(PeriodError, match="has no time zone"):
        parse_period_end("2026-01-01T00:05:00")
    with pytest.raises(PeriodError, match="not an ISO-8601 instant"):
        parse_period_end("yesterday")
