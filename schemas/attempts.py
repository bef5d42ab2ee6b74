"""A plan attempt's vocabulary: what became of it (`PlanStatus`) and its id's grammar.

Both are contracts between the layers: plan writes a status and an id, publish, approval and
healing change or read them, and MLflow (`reconf.publish_status`, `reconf.plan_id`), `reconf
audit` and `reconf compare` read them back. They are written once, here, so that the engines
(jobs/tracking/, jobs/lake/) know them without importing a stage, and so that no writer spells a
status its readers do not know. The values are stored (Delta rows, MLflow tags, manifests, JSON):
they never change, whatever the names.

Plan ids (each part validated elsewhere: the job id by schemas/config/rules.py, which allows no
`@` or `#`; the period end is schemas/landing.py's canonical form, which has neither):

- `<job>@<period_end>`: a period's first attempt (the id every plan had before attempts existed,
  so older lakes read the same);
- `<job>@<period_end>#<n>`: its n-th attempt, n ≥ 2;
- `<job>@<period_end>#dry-<n>`: a dry run's (never written to the tables);
- `<job>@<period_end>#<kind>-v<N>`, kind `rollback` or `healing`: a version of its own, planned
  on the period's statistics but never one of its attempts, N the version it is published as.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Final, Literal

from schemas.landing import format_period_end, parse_period_end

__all__ = ["OWN_VERSION_KINDS", "REFUSED_AT_APPROVAL", "OwnVersionKind", "PlanId", "PlanStatus",
           "attempt_of", "is_own_version", "own_version_id", "own_version_patterns",
           "parse_plan_id", "plan_id"]


class PlanStatus(StrEnum):
    """A plan's status: the `plans` table's `status` column and the run's `reconf.publish_status`
    tag (one more value, `ALREADY_PUBLISHED`, is only ever publish's answer)."""

    #: recorded by plan; publish may still publish it
    PLANNED = "planned"
    #: the period's published attempt (and every `assignment_versions` row's status)
    PUBLISHED = "published"
    #: never published: another attempt of its period was (before or after it was planned)
    NOT_PUBLISHED = "not_published"
    #: never published: planned for a period older than the newest published one
    HISTORICAL = "historical"
    #: never published: a version was published after it was planned, so its moves are stale
    STALE = "stale"
    #: never published: an approver said no (jobs/approval.py) ...
    REJECTED = "rejected"
    #: ... or nobody answered within the job's `approval_timeout`
    TIMED_OUT = "timed_out"
    #: publish's answer for a period published before (by this plan or another); never stored
    ALREADY_PUBLISHED = "already_published"


#: the statuses approval leaves on a plan: publish refuses a plan in one of them
REFUSED_AT_APPROVAL: Final = (PlanStatus.REJECTED, PlanStatus.TIMED_OUT)

OwnVersionKind = Literal["rollback", "healing"]
#: the strategies whose plans are versions of their own (jobs/publish/rollback.py, jobs/heal/)
OWN_VERSION_KINDS: Final[tuple[OwnVersionKind, ...]] = ("rollback", "healing")
_DRY: Final = "dry-"
_OWN = re.compile(rf"#(?:{'|'.join(OWN_VERSION_KINDS)})-v\d+$")
_TAIL = re.compile(rf"(?:(?P<attempt>\d+)|{_DRY}(?P<dry>\d+)"
                   rf"|(?P<kind>{'|'.join(OWN_VERSION_KINDS)})-v(?P<version>\d+))", re.ASCII)


def plan_id(job_id: str, period_end: datetime, attempt: int = 1, *, dry_run: bool = False) -> str:
    """The id of the `attempt`-th plan (or dry run) of a period."""
    base = f"{job_id}@{format_period_end(period_end)}"
    if dry_run:
        return f"{base}#{_DRY}{attempt}"
    return base if attempt == 1 else f"{base}#{attempt}"


def own_version_id(job_id: str, period_end: datetime, kind: str, version: int) -> str:
    """The plan id of a rollback's or a healing's plan published as `version`."""
    return f"{job_id}@{format_period_end(period_end)}#{kind}-v{version}"


def is_own_version(pid: str) -> bool:
    """The plan id names a version of its own (a rollback's or a healing's), not an attempt."""
    return bool(_OWN.search(pid))


def own_version_patterns() -> tuple[str, ...]:
    """SQL `LIKE` patterns matching the plan ids of versions of their own (the lake's queries
    leave them out of a period's attempts)."""
    return tuple(f"%#{kind}-v%" for kind in OWN_VERSION_KINDS)


def attempt_of(pid: str) -> int:
    """The attempt number a plan id carries (1 for an id without one, as older plans have)."""
    _, sep, tail = pid.rpartition("#")
    tail = tail.removeprefix(_DRY)
    return int(tail) if sep and tail.isdigit() else 1


@dataclass(frozen=True)
class PlanId:
    """A plan id's parts: an attempt's (`kind` None), a dry run's, or a version of its own's
    (`kind` and `version`, `attempt` 1)."""

    job_id: str
    period_end: datetime
    attempt: int = 1
    dry_run: bool = False
    kind: OwnVersionKind | None = None
    version: int | None = None

    def __str__(self) -> str:
        if self.kind is not None and self.version is not None:
            return own_version_id(self.job_id, self.period_end, self.kind, self.version)
        return plan_id(self.job_id, self.period_end, self.attempt, dry_run=self.dry_run)


def parse_plan_id(pid: str) -> PlanId:
    """The parts of a plan id (the module's docstring); ValueError for a string of another shape
    (schemas.errors.PeriodError, a ValueError, for a period end that is not one)."""
    job_id, at, rest = pid.partition("@")
    stamp, sep, tail = rest.partition("#")
    if not at or not job_id or not stamp:
        raise ValueError(f"{pid!r} is not a plan id (<job>@<period_end>[#<suffix>])")
    period_end = parse_period_end(stamp)
    if not sep:
        return PlanId(job_id, period_end)
    m = _TAIL.fullmatch(tail)
    if m is None:
        raise ValueError(f"{pid!r} is not a plan id: unknown suffix #{tail}")
    if m["attempt"] is not None:
        return PlanId(job_id, period_end, int(m["attempt"]))
    if m["dry"] is not None:
        return PlanId(job_id, period_end, int(m["dry"]), dry_run=True)
    kind: OwnVersionKind = "rollback" if m["kind"] == "rollback" else "healing"
    return PlanId(job_id, period_end, kind=kind, version=int(m["version"]))
