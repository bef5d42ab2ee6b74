"""The stand-in runtime's link measurements for a wide-area job (SPRAWL; schemas/landing.py
``links/``).

A synthetic job with a topology file may measure its links: `links = { ... }` in its `source`
table. Each period it lands one row per link of the topology file: the configured latency and
bandwidth, each times a factor drawn uniformly in [1 - jitter, 1 + jitter] (a measurement's
noise, keyed by seed, period and link, so a re-landed period is byte-identical), after the
changes in force: from job period n on (the period ending at start_date + n·spl), a link has a
new latency and/or bandwidth (0: the link is down).

Config form (config/jobs.toml, a synthetic `source` table)::

    links = { jitter = 0.02, changes = [{ period = 4, a = "gw-us", b = "gw-eu", latency_ms = 400.0 }] }
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta

import numpy as np
import pyarrow as pa

from schemas.landing import FACET_SCHEMAS, LINKS, format_period_end, parse_period_end

__all__ = ["Link", "LinkChange", "LinkFeed", "link_feed"]

#: a configured link of the job's topology file: (a, b, latency_ms, bandwidth)
Link = tuple[str, str, float, float]

_KEYS = {"jitter", "changes"}
_CHANGE_KEYS = {"period", "a", "b", "latency_ms", "bandwidth"}


@dataclass(frozen=True)
class LinkChange:
    """From job period `period` on, link a–b has this latency and/or bandwidth (None: as before)."""

    period: int
    a: str
    b: str
    latency_ms: float | None = None
    bandwidth: float | None = None


@dataclass(frozen=True)
class LinkFeed:
    """What the stand-in measures on the links of a job's topology each period."""

    links: tuple[Link, ...]
    start: datetime
    period_s: int
    seed: int
    jitter: float = 0.0
    changes: tuple[LinkChange, ...] = ()

    def period_of(self, period_end: datetime) -> int:
        """The job period (1-based) ending at `period_end`."""
        return round((period_end - self.start).total_seconds() / self.period_s)

    def measured(self, period_end: datetime) -> list[tuple[str, str, float, float]]:
        """(a, b, latency_ms, bandwidth) of every configured link this period."""
        n = self.period_of(period_end)
        out = []
        for a, b, latency, bandwidth in self.links:
            for c in self.changes:
                if c.period <= n and {c.a, c.b} == {a, b}:
                    latency = latency if c.latency_ms is None else c.latency_ms
                    bandwidth = bandwidth if c.bandwidth is None else c.bandwidth
            noise = _factors(self.seed, format_period_end(period_end), a, b, self.jitter)
            out.append((a, b, latency * noise[0], bandwidth * noise[1]))
        return out

    def table(self, period_end: datetime) -> dict[str, pa.Table]:
        """The ``links/`` facet dataset of the period, stamped at its first instant."""
        end = parse_period_end(format_period_end(period_end))
        rows = self.measured(end)
        first = end - timedelta(seconds=self.period_s)
        columns = {"ts": [first] * len(rows), "a": [r[0] for r in rows],
                   "b": [r[1] for r in rows], "latency_ms": [r[2] for r in rows],
                   "bandwidth": [r[3] for r in rows]}
        schema = FACET_SCHEMAS[LINKS]
        return {LINKS: pa.Table.from_arrays([pa.array(columns[f.name], type=f.type)
                                             for f in schema], schema=schema)}


def _factors(seed: int, stamp: str, a: str, b: str, jitter: float) -> tuple[float, float]:
    if jitter == 0:
        return 1.0, 1.0
    digest = hashlib.sha256(f"{seed}|links|{stamp}|{a}|{b}".encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:16], "big"))
    low, high = 1.0 - jitter, 1.0 + jitter
    return float(rng.uniform(low, high)), float(rng.uniform(low, high))


def link_feed(raw: object, links: tuple[Link, ...], *, start: datetime, period_s: int,
              seed: int) -> LinkFeed:
    """The `links` table of a synthetic source as a `LinkFeed` over the topology's `links`;
    ValueError names the field and the rule."""
    if not isinstance(raw, Mapping):
        raise ValueError(f"links must be a table (jitter, changes), got {raw!r}")
    if unknown := sorted(set(raw) - _KEYS):
        raise ValueError(f"links: unknown field(s) {', '.join(unknown)}; known: "
                         f"{', '.join(sorted(_KEYS))}")
    jitter = raw.get("jitter", 0.0)
    if isinstance(jitter, bool) or not isinstance(jitter, int | float) or not 0 <= jitter < 1:
        raise ValueError(f"links.jitter must be a number in [0, 1), got {jitter!r}")
    known = {frozenset(lk[:2]) for lk in links}
    changes = []
    raw_changes = raw.get("changes", [])
    if not isinstance(raw_changes, list):
        raise ValueError(f"links.changes must be a list of tables, got {raw_changes!r}")
    for i, c in enumerate(raw_changes):
        at = f"links.changes[{i}]"
        if not isinstance(c, Mapping) or not {"period", "a", "b"} <= set(c) or set(c) - _CHANGE_KEYS:
            raise ValueError(f"{at} must be a table with period, a, b and latency_ms and/or "
                             f"bandwidth, got {c!r}")
        if type(c["period"]) is not int or c["period"] < 1:
            raise ValueError(f"{at}.period must be a job period >= 1, got {c['period']!r}")
        if frozenset((c["a"], c["b"])) not in known:
            raise ValueError(f"{at}: {c['a']}-{c['b']} is not a link of the job's topology")
        latency, bandwidth = c.get("latency_ms"), c.get("bandwidth")
        if latency is None and bandwidth is None:
            raise ValueError(f"{at} changes nothing; give latency_ms and/or bandwidth")
        for name, value, positive in (("latency_ms", latency, True),
                                      ("bandwidth", bandwidth, False)):
            if value is None:
                continue
            ok = isinstance(value, int | float) and not isinstance(value, bool) and (
                (math.isfinite(value) and value > 0) if positive else value >= 0)
            if not ok:
                rule = "> 0 and finite" if positive else ">= 0 (0: the link is down)"
                raise ValueError(f"{at}.{name} must be {rule}, got {value!r}")
        changes.append(LinkChange(c["period"], str(c["a"]), str(c["b"]),
                                  None if latency is None else float(latency),
                                  None if bandwidth is None else float(bandwidth)))
    changes.sort(key=lambda ch: ch.period)
    return LinkFeed(links, start, period_s, seed, float(jitter), tuple(changes))
