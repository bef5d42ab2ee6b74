"""Airflow import error for the jobs whose config is invalid: defines no DAG, only raises.

dags/reconfigure.py generates the DAGs of the valid jobs and skips the invalid ones. The errors
are raised here, from a separate file, because Airflow 3 records import errors per file and marks
every DAG of a file that has one as stale (no runs are scheduled for it): raised from
reconfigure.py, one bad job would stop every job. So each bad job shows in
`airflow dags list-import-errors` and the UI's import errors under this file, with the config
file, the field and the rule; the good jobs keep running. When the config is fixed the error
clears on the next parse and the job's DAG appears.
"""

from __future__ import annotations

from schemas.config import ConfigError, read_jobs


def config_problems() -> list[str]:
    """One line per invalid job (or one for an unreadable file); empty when all is well."""
    try:
        loaded = read_jobs()
    except ConfigError as exc:
        return [f"{exc} (so no reconfigure DAG is generated)"]
    return [str(error) for error in loaded.errors.values()]


if _problems := config_problems():
    raise ConfigError(
        f"{len(_problems)} reconf job config error(s); the job(s) named get no DAG, the others "
        "run as usual:\n" + "\n".join(f"  - {p}" for p in _problems)
        + "\n  fix: correct the config file (the path above; RECONF_CONFIG or config/jobs.toml), "
        "the DAG appears on the next parse")
