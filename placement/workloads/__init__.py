"""Workloads: seeded, deterministic cluster states for the benchmarks and tests.

Not strategies (no objective, no guarantee): `synthetic` is the §5.1 generator (Figures 2–5,
with heterogeneous and hot-spot variants), `comm` the §5.3 workload with x % one-to-one
communication and the remote-traffic CPU cost model (Figures 10–11).
"""
from typing import TYPE_CHECKING

from placement.exports import lazy

if TYPE_CHECKING:
    from placement.workloads.comm import CommWorkload, comm_workload, fluctuate, remote_loads
    from placement.workloads.synthetic import heterogeneous, hot_spot, synthetic_state

__getattr__ = lazy(__name__, {
    "CommWorkload": "placement.workloads.comm",
    "comm_workload": "placement.workloads.comm",
    "fluctuate": "placement.workloads.comm",
    "remote_loads": "placement.workloads.comm",
    "heterogeneous": "placement.workloads.synthetic",
    "hot_spot": "placement.workloads.synthetic",
    "synthetic_state": "placement.workloads.synthetic",
})

__all__ = ["CommWorkload", "comm_workload", "fluctuate", "heterogeneous", "hot_spot",
           "remote_loads", "synthetic_state"]
