"""The Airflow assets of a job, shared by its DAGs (dags/reconfigure.py, dags/healing.py)."""

from __future__ import annotations

from airflow.sdk import Asset

__all__ = ["assignment_asset"]


def assignment_asset(job_id: str) -> Asset:
    """The Asset a job's publish (scheduled or healing) updates; schedule a runtime deployer on
    it."""
    return Asset(uri=f"reconf://{job_id}/assignment", name=f"reconf_{job_id}_assignment",
                 group="reconf")
