"""Every facet, registered once: what it lands, where collect writes it, how validate checks it,
how plan and fleet attach it to the state (jobs/facets/base.py `Facet`).

The order is the order of attachment: the network first (it pins units and may give the
strategy its queries), then the streams and their load model, then a dynamic job's sources,
subscriptions and arrivals (which decide the units' starting nodes). Validate runs each facet's
suites (`validate_facets`); plan and fleet read and attach them (jobs/plan/assemble.py); collect's
copy of the landed datasets (jobs/facets/subscriptions.py `FACET_TABLES`) is checked against the
declarations here by tests/jobs/test_facet_registry.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from jobs.facets.base import Assembly, Checked, Facet
from jobs.facets.comm import attach_comm, read_comm_totals, validate_comm_of
from jobs.facets.dynamic import attach_sources
from jobs.facets.links import read_link_rows, validate_links_of
from jobs.facets.load_model import attach_streams, read_stream_rows, validate_streams_of
from jobs.facets.network import attach_network_facet
from jobs.facets.subscriptions import read_facet_rows, validate_facets_of
from schemas.landing import COMM_TOTALS, LINKS, SOURCES, STREAMS, SUBSCRIPTIONS
from schemas.tables import COMM_TOTALS as COMM_TOTALS_TABLE
from schemas.tables import LOAD_MODEL, NETWORK_LINKS, SOURCE_STATS, STREAM_STATS
from schemas.tables import SUBSCRIPTIONS as SUBSCRIPTIONS_TABLE

if TYPE_CHECKING:
    from jobs.context import StageContext
    from jobs.validate.suites import ValidationReport

__all__ = ["FACETS", "attach_facets", "read_facets", "validate_facets"]

FACETS: tuple[Facet, ...] = (
    Facet("network", (LINKS,), (NETWORK_LINKS,), ("network_links",),
          validate=validate_links_of, read=read_link_rows, attach=attach_network_facet),
    Facet("load_model", (STREAMS,), (STREAM_STATS, LOAD_MODEL), ("stream_stats", "load_model"),
          validate=validate_streams_of, read=read_stream_rows, attach=attach_streams),
    Facet("sources", (SOURCES, SUBSCRIPTIONS), (SOURCE_STATS, SUBSCRIPTIONS_TABLE),
          ("source_stats", "subscriptions"),
          validate=validate_facets_of, read=read_facet_rows, attach=attach_sources),
    # the pairs a top-k landing dropped, per unit (jobs/facets/comm.py)
    Facet("comm", (COMM_TOTALS,), (COMM_TOTALS_TABLE,), ("comm_totals",),
          validate=validate_comm_of, read=read_comm_totals, attach=attach_comm),
)


def validate_facets(ctx: StageContext, checked: Checked, report: ValidationReport
                    ) -> ValidationReport:
    """`report` with every facet's verdict added (a facet the period lacks adds nothing), in
    reverse registry order: a report lists a dynamic job's facet failures first, then the
    streams', then the links' (as validate always has)."""
    for facet in reversed(FACETS):
        report = facet.validate(ctx, checked, report)
    return report


def read_facets(ctx: StageContext) -> dict[str, Any]:
    """Each facet's rows of the period (None where the period has none), by facet name."""
    return {facet.name: facet.read(ctx) for facet in FACETS}


def attach_facets(assembly: Assembly, rows: dict[str, Any]) -> Assembly:
    """The assembly with every facet attached, in registry order."""
    for facet in FACETS:
        assembly = facet.attach(assembly, rows.get(facet.name))
    return assembly
