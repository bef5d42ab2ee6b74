"""The network facet of a wide-area job (SPRAWL): its topology file joined to the period's state.

The plan assembles the state through the facet registry (jobs/facets/registry.py), whose network
step is `attach_network`, first after building the ClusterState: a job with a `topology` file
gets the file's network and pinned units on its state, and a strategy that plans on the network
facet (schemas/strategies.py `facets`) gets the file's queries (latency bounds, clients) unless
its parameters name some. The period's
measured links (Delta ``network_links``, when the runtime landed them; jobs/facets/links.py) are
overlaid on the file's links first (placement/sprawl/measured.py), so plans follow changing
latencies. A file that is bad, measurements that do not fit it, or a topology that does not fit
the period's nodes and units, stop the stage with a StageError.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from jobs.errors import StageError
from jobs.facets.base import Assembly
from placement.model import ClusterState
from schemas.config import JobConfig
from schemas.strategies import STRATEGIES

__all__ = ["attach_network", "attach_network_facet"]


def attach_network(job: JobConfig, state: ClusterState, strategy: str,
                   params: dict[str, Any], measured: Sequence[Mapping[str, Any]] | None = None
                   ) -> tuple[ClusterState, dict[str, Any]]:
    """(state, params) with the job's topology, and the period's `measured` links (the
    ``network_links`` rows; None: none landed) overlaid on it; unchanged without a topology."""
    if job.topology is None:
        return state, params
    from placement.sprawl.measured import measured_links, overlay_links
    from placement.sprawl.topology import TopologyError, load_topology, query_params, with_topology

    try:
        topology = load_topology(job.topology)
        if measured:
            topology = overlay_links(topology, measured_links(measured),
                                     f"lake/network_links (job {job.job_id})")
        state = with_topology(state, topology, f"topology file {job.topology}")
    except TopologyError as exc:
        raise StageError(str(exc), where=f"job {job.job_id!r}: topology",
                         fix="correct the topology file (every node of the job must be a site, "
                             "every pinned unit one of the job's units) or the runtime's link "
                             "measurements (validate the period first: its network_links suite "
                             "names the bad rows)") from None
    if "network" in STRATEGIES[strategy].facets and "queries" not in params and topology.queries:
        params = {**params, "queries": query_params(topology)}
    return state, params


def attach_network_facet(assembly: Assembly, rows: Sequence[Mapping[str, Any]] | None
                         ) -> Assembly:
    """The registry's attach step: `attach_network` on the assembly's state and parameters."""
    state, params = attach_network(assembly.job, assembly.state, assembly.strategy,
                                   dict(assembly.params), rows)
    return replace(assembly, state=state, params=params)
