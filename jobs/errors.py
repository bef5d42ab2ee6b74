"""The one error a stage raises for bad input: what is wrong, where, and how to fix it."""

from __future__ import annotations

__all__ = ["StageError"]


class StageError(Exception):
    """A stage refused to run; nothing it would have written was written."""

    def __init__(self, what: str, *, where: str, fix: str) -> None:
        self.what, self.where, self.fix = what, where, fix
        super().__init__(f"{what}\n  where: {where}\n  fix:   {fix}")
