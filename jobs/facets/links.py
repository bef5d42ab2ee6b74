"""A wide-area job's measured links through the pipeline (SPRAWL, Mei 2015 §3.2, §5.4.1).

A job with a `topology` file may land, beside its samples, each link's measured one-way latency
and available bandwidth over the period (schemas/landing.py ``links/``). Three steps, each called
with a line from its stage:

- **collect** copies the rows inside the period's window into Delta ``network_links`` as they
  are (jobs/facets/subscriptions.py, like the other facet tables: partitioned by ``job_id``, the period
  replaced); `check_links_landing` refuses the dataset from a job without a topology file.
- **validate** (`validate_links_of`, the facet's `validate` step): GE suite network_links.json against the job's topology
  file (both ends are its sites, the link is one of its links, measured at most once in either
  direction, latency > 0 and finite, bandwidth >= 0), then `partition_failure`: links measured
  down must not cut a zone off (refused here, naming the zone, rather than failing the plan);
  a failure names the rows and stops the cycle before planning.
- **plan** (`read_link_rows`, the `read` step of the network facet, jobs/facets/network.py): the period's rows, which jobs/facets/network.py overlays on the
  file's links (placement/sprawl/measured.py), so the plan follows the measured latencies.

A period without the dataset is planned on the file's values, as before.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from jobs.errors import StageError
from jobs.facets.base import Checked
from jobs.validate.suites import MAX_ROWS, Failure, ValidationReport
from placement.facets import Network
from schemas.config import JobConfig, Paths
from schemas.landing import LINKS, format_period_end, period_dir
from schemas.tables import NETWORK_LINKS

if TYPE_CHECKING:
    import pandas as pd

    from jobs.context import StageContext

__all__ = ["check_links_landing", "partition_failure", "read_link_rows", "validate_links_of"]


def check_links_landing(paths: Paths, job: JobConfig, period_end: datetime,
                        files: Mapping[str, list[Path]]) -> None:
    """A landed ``links/`` dataset needs the job's topology file (the links it measures)."""
    if LINKS not in files or job.topology is not None:
        return
    where = period_dir(paths.landing, job.job_id, period_end) / LINKS
    raise StageError(
        f"the period has a {LINKS} dataset (measured network links) but job {job.job_id!r} has "
        "no topology file", where=str(where),
        fix=f"give the job its topology (`topology = \"...\"` in [jobs.{job.job_id}], "
            "docs/algorithms.md \"SPRAWL\"), or stop the runtime landing links and land the "
            f"period again (`reconf land --job {job.job_id} --period-end "
            f"{format_period_end(period_end)}`)")


def validate_links_of(ctx: StageContext, checked: Checked, report: ValidationReport
                      ) -> ValidationReport:
    """`report` with the measured links' verdict added (jobs/validate/suites.py `validate_links`),
    for a period whose collect wrote network_links."""
    job = ctx.job
    if ctx.marker is None or not ctx.marker.wrote(NETWORK_LINKS.name) or job.topology is None:
        return report
    from jobs.validate.suites import validate_links
    from placement.sprawl.topology import TopologyError, load_topology

    try:
        topology = load_topology(job.topology)
    except TopologyError as exc:
        raise StageError(str(exc), where=f"job {job.job_id!r}: topology",
                         fix="correct the topology file") from None
    links = ctx.lake.period_frame(NETWORK_LINKS, job.job_id, ctx.end)
    verdict = validate_links(links, sites=topology.network.site_ids,
                             configured=[(lk.a, lk.b) for lk in topology.network.links])
    cut = partition_failure(topology.network, links) if verdict.success else None
    failures = report.failures + verdict.failures + ((cut,) if cut is not None else ())
    return ValidationReport(report.success and verdict.success and cut is None, failures)


def partition_failure(network: Network, links: pd.DataFrame) -> Failure | None:
    """The zones a period's links measured down (bandwidth 0) cut off from the rest, as one
    failure naming them and the links; None while every site still reaches every other.

    A partitioned network is refused here, at validate, rather than planned per reachable part:
    a pinned source in a cut-off zone cannot reach its sinks at all, so no placement meets the
    job's latency bounds; planning it anyway would publish a plan that silently drops that
    zone's traffic. The runtime keeps its assignment until a link is back (docs/operations.md,
    "Bad input")."""
    import networkx as nx

    down = {frozenset((str(a), str(b))) for a, b, bw in
            zip(links["a"], links["b"], links["bandwidth"], strict=True) if bw == 0}
    if not down:
        return None
    graph = nx.Graph()
    graph.add_nodes_from(network.site_ids)
    graph.add_edges_from((lk.a, lk.b) for lk in network.links
                         if frozenset((lk.a, lk.b)) not in down)
    parts = sorted((sorted(p) for p in nx.connected_components(graph)),
                   key=lambda p: (-len(p), p))
    if len(parts) == 1:
        return None
    zone = {s.node: s.zone for s in network.sites}
    described = []
    for part in parts[1:]:
        zones = sorted({zone[s] for s in part if zone[s]})
        sites = ", ".join(part[:5]) + (f" (+{len(part) - 5} more)" if len(part) > 5 else "")
        described.append(f"zone {', '.join(repr(z) for z in zones)} (sites {sites})" if zones
                         else f"sites {sites}")
    cut_off = {s for part in parts[1:] for s in part}
    rows = tuple({"a": lk.a, "b": lk.b, "bandwidth": 0.0} for lk in network.links
                 if frozenset((lk.a, lk.b)) in down and ((lk.a in cut_off) != (lk.b in cut_off)))
    return Failure(
        table=NETWORK_LINKS.name, expectation="network_stays_connected", column="bandwidth",
        rule=f"the links measured down (bandwidth 0) must leave every site reachable; "
             f"{'; '.join(described)} cut off from the rest",
        unexpected_count=len(rows), rows=rows[:MAX_ROWS],
        fix=f"bring a link to {described[0]} back up (or correct its measurement) and land the "
            "period again; meanwhile the runtime keeps its assignment")


def read_link_rows(ctx: StageContext) -> list[dict[str, Any]] | None:
    """The period's network_links rows, for a period whose collect wrote them; None otherwise,
    without reading a table."""
    if ctx.job.topology is None or ctx.marker is None or not ctx.marker.wrote(NETWORK_LINKS.name):
        return None
    return ctx.lake.period_rows(NETWORK_LINKS, ctx.job_id, ctx.end)
