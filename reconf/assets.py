"""The Airflow Assets reconf's DAGs update (light: imports only the Airflow task SDK).

`reconf://<job_id>/assignment` is updated by every DAG task that publishes an assignment version
of the job: the reconfigure DAG's `publish`, the healing DAG's `heal` and the rollback DAG's
`rollback`; a runtime deployer scheduled on it sees each new version (docs/operations.md, "The
assignment Asset").
"""

from __future__ import annotations

from airflow.sdk import Asset

__all__ = ["assignment_asset"]


def assignment_asset(job_id: str) -> Asset:
    """The Asset a job's publishing tasks update; schedule a runtime deployer on it."""
    return Asset(uri=f"reconf://{job_id}/assignment", name=f"reconf_{job_id}_assignment",
                 group="reconf")
