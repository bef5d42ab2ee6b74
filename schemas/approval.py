"""The answers to a plan's approval request (jobs/approval.py records them; publish refuses a
plan whose attempt a human rejected or nobody answered: jobs/publish/stage.py)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from schemas.attempts import PlanStatus
from schemas.reasons import shown_reason

__all__ = ["APPROVED", "REJECTED", "TIMED_OUT", "Decision"]

#: the answers; a refusal is also the status approval leaves on the plan (schemas/attempts.py
#: `REFUSED_AT_APPROVAL`: publish refuses a plan in one of them), so it is spelled as that
APPROVED = "approved"
REJECTED, TIMED_OUT = PlanStatus.REJECTED, PlanStatus.TIMED_OUT


@dataclass(frozen=True)
class Decision:
    """One answer to an approval request: who gave it, when (ISO-8601), and why."""

    outcome: str  # APPROVED, REJECTED or TIMED_OUT
    reason: str = ""
    by: str | None = None  # the responding user; None for a timeout
    at: str = ""

    def line(self) -> str:
        """"rejected by admin at 2026-…: too many moves at peak" (the audit's wording)."""
        who = f" by {self.by}" if self.by else ""
        when = f" at {self.at}" if self.at else ""
        word = self.outcome.replace("_", " ")
        return f"{word}{who}{when}" + (f": {self.reason}" if self.reason else "")

    def shown(self, indent: str = "    ") -> str:
        """`line()` for a terminal (`reconf audit`): the reason's later lines indented under
        it, other control characters escaped; the records keep `line()`, the reason as given."""
        return dataclasses.replace(self, reason=shown_reason(self.reason, indent)).line()
