"""The bounds within which the planner computes: what validation accepts and what loads.

Finite is not enough. A source rate of 1e308 is finite, yet Herding's traffic costs (sums of
rates times fan-outs) overflow to inf and then NaN; a stream rate of 1e300 makes the load model's
least-squares system singular in floating point. Each bound below is far beyond any real
deployment (a trillion tuples per second, a petabyte of state per unit) yet leaves the planner's
sums, products and squares well inside float64 (about 1.8e308) with room for 10^6 units. The GE
suites (schemas/expectations/*.json) carry the same numbers as ``max_value``; a test checks they
agree. docs/operations.md, "Bad input", lists them.

Identifiers travel further than the lake: into the published manifest, MLflow run, param and
metric names (which allow only alphanumerics, ``_ - . / :`` and spaces, at most 250 characters,
and no name that a path normalisation would change, such as ``a//b``), PuLP/HiGHS variable
names and the runtime's routing tables. `ID_PATTERN` is what all of them accept (no ``/``, no
space), checked at validate by every suite's id columns.
"""

from __future__ import annotations

import re

__all__ = [
    "CAPACITY_MAX",
    "COEFFICIENT_MAX",
    "COUNT_MAX",
    "ID_MAX_LENGTH",
    "ID_PATTERN",
    "LATENCY_MS_MAX",
    "LOAD_PCT_MAX",
    "RATE_MAX",
    "STATE_BYTES_MAX",
    "TOPOLOGY_MAX_BYTES",
    "TOPOLOGY_MAX_LINKS",
    "TOPOLOGY_MAX_QUERIES",
    "TOPOLOGY_MAX_SITES",
    "id_problem",
]

#: tuples/s or bytes/s of a source, stream, edge or link (a trillion per second).
RATE_MAX = 1e12
#: a unit's or node's load, in % of a reference node (a million reference nodes' worth).
LOAD_PCT_MAX = 1e6
#: a node's capacity weight (1.0 = the reference node).
CAPACITY_MAX = 1e6
#: a load-model coefficient l_jk, % of a node per tuple/s: with RATE_MAX, a load <= 1e18.
COEFFICIENT_MAX = 1e6
#: a unit's state size (a petabyte).
STATE_BYTES_MAX = 1e15
#: tuple and byte counts and CPU milliseconds over one period (int64 holds 9.2e18).
COUNT_MAX = 1e18
#: one link's latency (about 2.8 hours).
LATENCY_MS_MAX = 1e7

#: A topology file's size limits, checked when it loads (placement/sprawl/topology.py). Routing
#: is all-pairs over the sites (n x n matrices) and, on a chain, cubic in the worst case: at 1000
#: sites a plan takes about 15 s on one core, at 2000 well over 2 minutes.
TOPOLOGY_MAX_SITES = 1000
TOPOLOGY_MAX_LINKS = 20_000
TOPOLOGY_MAX_QUERIES = 10_000
TOPOLOGY_MAX_BYTES = 8 * 1024 * 1024

#: Units, nodes, sources and streams: what MLflow names, PuLP and the manifest all accept.
ID_MAX_LENGTH = 200
ID_PATTERN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:-]{0,199}$")


def id_problem(value: str) -> str | None:
    """Why `value` is not a usable identifier, or None when it is."""
    if len(value) > ID_MAX_LENGTH:
        return f"is {len(value)} characters long, over {ID_MAX_LENGTH}"
    if ID_PATTERN.match(value):
        return None
    bad = sorted({c for c in value if not re.match(r"[A-Za-z0-9_.:-]", c)})
    if bad:
        return f"contains {', '.join(repr(c) for c in bad[:5])}"
    return "must start with a letter, digit or '_'"
