"""The Airflow timetable of a job's DAG: one run per statistics period, exactly on its grid.

A job's period ends are ``start_date + k·SPL`` (k >= 1; schemas/periods.py). Airflow's own
``schedule=<timedelta>`` (DeltaTriggerTimetable) counts from the moment the DAG is unpaused, so
its runs fell between period ends, which every stage refuses. This timetable gives each run

- **logical date = the period end T** (so does the data interval: ``[T, T]``, as Airflow's
  trigger timetables do; ``run_after`` is T too). Every command an operator types (``airflow
  backfill create --from-date/--to-date``, ``airflow tasks clear -s/-e``, ``airflow dags test``)
  therefore names period ends, and the stages read the period from the logical date;
- **the catch-up policy** ``catchup_periods`` (N >= 0, config): when runs are due for several
  periods at once (the DAG was paused, the scheduler was down, a run waited long for its
  landing), only the newest N periods that have ended run, oldest first; older missed periods get
  no run (they are skipped, and the next run's first task logs which). N = 0: only periods that end
  from now on. Unpausing a job therefore runs the newest ended period (N = 1, the default) and then
  every period as it ends.

Backfills (``airflow backfill create``) ask with ``catchup=True`` and get every grid point of
their range, aligned: a from-date between two period ends starts at the next one.

The class is a core ``airflow.timetables.base.Timetable``; the scheduler and the dag-processor
find it by its import path through the plugin in ``infra/airflow_plugins/`` (the plugins folder
``reconf.settings.airflow_env`` sets), which is how Airflow 3 loads custom timetables.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.timetables.base import DagRunInfo, DataInterval, TimeRestriction, Timetable

__all__ = ["PeriodGridTimetable", "grid_ceil", "grid_floor", "next_period_end"]


def grid_floor(start: datetime, spl: timedelta, at: datetime) -> datetime | None:
    """The newest period end at or before `at` (None before the first period has ended)."""
    k = (at - start) // spl
    return start + k * spl if k >= 1 else None


def grid_ceil(start: datetime, spl: timedelta, at: datetime) -> datetime:
    """The first period end at or after `at` (at least the first period end, start + SPL)."""
    k = max(1, -((start - at) // spl))  # ceil((at - start) / spl)
    return start + k * spl


def next_period_end(*, start: datetime, spl: timedelta, last: datetime | None, now: datetime,
                    catchup_periods: int | None, earliest: datetime | None = None,
                    latest: datetime | None = None) -> datetime | None:
    """The period end of the next automated run, or None (past `latest`).

    `last`: the period end of the newest scheduled or backfilled run (None: never ran);
    `catchup_periods`: N of the catch-up policy, or None for every period (a backfill's
    enumeration). The answer is on the grid, after `last`, not before `earliest`, and, unless N is
    None, not older than the newest N periods that have ended by `now`.
    """
    floor = start if earliest is None or earliest <= start else earliest
    candidate = grid_ceil(start, spl, floor)
    if last is not None:
        candidate = max(candidate, grid_ceil(start, spl, last + spl))
    if catchup_periods is not None:
        newest = grid_floor(start, spl, now)
        oldest_allowed = (newest - (catchup_periods - 1) * spl if newest is not None
                          else grid_ceil(start, spl, now))
        if catchup_periods == 0:
            oldest_allowed = grid_ceil(start, spl, now + timedelta(microseconds=1))
        candidate = max(candidate, oldest_allowed)
    if latest is not None and candidate > latest:
        return None
    return candidate


def _std(value: datetime) -> datetime:
    """A plain `datetime` in UTC (pendulum's intervals do not divide by a timedelta)."""
    d = value.astimezone(UTC)
    return datetime(d.year, d.month, d.day, d.hour, d.minute, d.second, d.microsecond, tzinfo=UTC)


def _utc(value: datetime) -> Any:
    """A pendulum DateTime in UTC (what Airflow's DagRunInfo carries)."""
    import pendulum

    return pendulum.instance(value.astimezone(UTC))


class PeriodGridTimetable(Timetable):
    """Runs at start_date + k·SPL with logical date = period end; catch-up policy N (module doc)."""

    def __init__(self, start: datetime, spl: timedelta, catchup_periods: int = 1) -> None:
        if start.tzinfo is None:
            raise ValueError("PeriodGridTimetable: start must be timezone-aware")
        if spl <= timedelta(0):
            raise ValueError(f"PeriodGridTimetable: SPL must be positive, got {spl}")
        if catchup_periods < 0:
            raise ValueError(f"PeriodGridTimetable: catchup_periods must be >= 0, got {catchup_periods}")
        self.start = _std(start)
        self.spl = spl
        self.catchup_periods = catchup_periods
        self.description = (f"every {spl} from {self.start:%Y-%m-%dT%H:%M:%SZ} (logical date = "
                            f"period end); catch-up: the newest {catchup_periods} missed period(s)")

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, PeriodGridTimetable) and self.serialize() == other.serialize())

    def __hash__(self) -> int:
        return hash((self.start, self.spl, self.catchup_periods))

    @property
    def summary(self) -> str:
        return f"every {self.spl} (period grid)"

    def serialize(self) -> dict[str, Any]:
        return {"start": self.start.isoformat(), "spl_s": self.spl.total_seconds(),
                "catchup_periods": self.catchup_periods}

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> Timetable:
        return cls(datetime.fromisoformat(data["start"]), timedelta(seconds=data["spl_s"]),
                   int(data["catchup_periods"]))

    def infer_manual_data_interval(self, *, run_after: Any) -> DataInterval:
        """A manual run (`airflow dags trigger --logical-date T`, `dags test`) names its period."""
        return DataInterval.exact(run_after)

    def next_dagrun_info(self, *, last_automated_data_interval: DataInterval | None,
                         restriction: TimeRestriction) -> DagRunInfo | None:
        from airflow._shared.timezones.timezone import utcnow

        last = last_automated_data_interval
        end = next_period_end(
            start=self.start, spl=self.spl, last=None if last is None else _std(last.end),
            now=_std(utcnow()), catchup_periods=None if restriction.catchup else self.catchup_periods,
            earliest=None if restriction.earliest is None else _std(restriction.earliest),
            latest=None if restriction.latest is None else _std(restriction.latest))
        return None if end is None else DagRunInfo.exact(_utc(end))
