"""The one error type for refused input: what is wrong, where, and how to fix it.

Every refusal a user can meet derives from `ReconfError`: a stage's (`jobs.errors.StageError`),
a period end's (`schemas.periods.PeriodError`), the config file's (`ConfigError`), a manifest's
(`ManifestError`), a strategy parameter's (`placement.params.ParamsError`), a strategy's input
(`placement.common.StrategyInputError`), a topology file's (`placement.sprawl.topology
.TopologyError`) and the load-model facet's (`placement.rod.model.LoadModelError`). The CLI,
`jobs/submit.py` and the DAG catch this one type: exit 2 (or an Airflow failure without retries),
the message as is, nothing half-written.

Most subclasses are also `ValueError`s, as they always were (callers that check a value catch
them so); `StageError` is not, so an `except ValueError` around a stage never swallows a stage's
refusal.
"""

from __future__ import annotations

__all__ = ["ConfigError", "PeriodError", "ReconfError"]


class ReconfError(Exception):
    """Bad input refused before anything was written.

    `what` is the problem; `where` the file, field, table or period it was found in; `fix` what to
    do. A subclass whose message already starts with the place (a config error is
    ``<file>: jobs.<id>.<field>: <rule>``) may give `what` alone: its text is then the message,
    and the CLI derives the where and fix lines (reconf/cli/errors.py).
    """

    what: str
    where: str  # "" when the message names its place itself
    fix: str

    def __init__(self, what: str, *, where: str | None = None, fix: str | None = None) -> None:
        self.what, self.where, self.fix = what, where or "", fix or ""
        lines = [what]
        if where is not None:
            lines.append(f"  where: {where}")
        if fix is not None:
            lines.append(f"  fix:   {fix}")
        super().__init__("\n".join(lines))

    def __reduce__(self) -> tuple[object, ...]:
        # keyword-only fields survive pickling (Spark executors and Airflow's workers send
        # exceptions across processes); the default reduce would call cls(message) only
        return (_rebuild, (type(self), str(self), self.__dict__))


def _rebuild(cls: type[ReconfError], message: str, state: dict[str, object]) -> ReconfError:
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    error.__dict__.update(state)
    return error


class ConfigError(ReconfError, ValueError):
    """A configuration value is wrong; the message says which file, which field, and the rule
    (``<file>: jobs.<id>.<field>: <rule>``), so `what` is the whole message."""


class PeriodError(ReconfError, ValueError):
    """A period end that is no instant (schemas/landing.py) or that the job does not have
    (schemas/periods.py); the message says what, where and how to fix it."""
