"""One clean period of a small job, shaped like Spark's ``toPandas()`` of the Delta rows."""

from __future__ import annotations

import pandas as pd

__all__ = ["KEYGROUPS", "NODES", "clean_edges", "clean_keygroups", "clean_nodes"]

KEYGROUPS = [f"kg-{i:03d}" for i in range(12)]
NODES = ["node-a", "node-b", "node-c"]
END = pd.Timestamp("2024-05-01 12:05:00")
START = pd.Timestamp("2024-05-01 12:00:00")


def clean_keygroups() -> pd.DataFrame:
    n = len(KEYGROUPS)
    return pd.DataFrame(
        {
            "job_id": ["job-1"] * n,
            "period_end": [END] * n,
            "period_start": [START] * n,
            "keygroup": KEYGROUPS,
            "operator": ["map" if i % 2 else "reduce" for i in range(n)],
            "node": [NODES[i % len(NODES)] for i in range(n)],
            "tuples_in": [1000 + i for i in range(n)],
            "tuples_out": [900 + i for i in range(n)],
            "cpu_ms": [12.5 * (i + 1) for i in range(n)],
            "load_pct": [0.0] + [5.0 + i for i in range(1, n)],
            "state_bytes": [2048 * i for i in range(n)],
            "samples": [30] * n,
        }
    )


def clean_edges() -> pd.DataFrame:
    pairs = [(KEYGROUPS[i], KEYGROUPS[(i + 1) % len(KEYGROUPS)]) for i in range(len(KEYGROUPS))]
    n = len(pairs)
    return pd.DataFrame(
        {
            "job_id": ["job-1"] * n,
            "period_end": [END] * n,
            "src_keygroup": [s for s, _ in pairs],
            "dst_keygroup": [d for _, d in pairs],
            "tuples": [100 * (i + 1) for i in range(n)],
            "bytes": [6400 * (i + 1) for i in range(n)],
            "tuples_per_s": [0.33 * (i + 1) for i in range(n)],
        }
    )


def clean_nodes() -> pd.DataFrame:
    n = len(NODES)
    return pd.DataFrame(
        {
            "job_id": ["job-1"] * n,
            "period_end": [END] * n,
            "node": NODES,
            "capacity": [4.0, 8.0, 2.5],
            "cpu_ms": [1500.0, 300.0, 0.0],
            "utilisation_pct": [50.0, 3.75, 0.0],
            "samples": [30] * n,
        }
    )
