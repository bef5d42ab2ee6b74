"""The rules of the job table's fields, as pydantic validators that word their own errors.

Each field type of `JobConfig` (schemas/config/job.py) is `Annotated[<type>, PlainValidator(rule)]`:
the rule takes the TOML value (or, from code, the typed value) and returns the field's value, or
raises `Rule` with the text the config error shows after the field's name. The loader
(schemas/config/load.py) prefixes each rule with the file, the job and the field path. Each
rule's docstring states what it accepts: the generated configuration reference
(tools/docs_reference.py) shows its first paragraph, the MAX_* names replaced by their values.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TypeAlias, cast

from pydantic import ValidationInfo

from schemas.config.paths import PROJECT_ROOT
from schemas.errors import ConfigError
from schemas.strategies import PIPELINE_PARAMS, STRATEGIES

__all__ = ["MAX_APPROVAL_TIMEOUT", "MAX_CATCHUP_PERIODS", "MAX_CYCLES", "MAX_DURATION",
           "MAX_LANDING_WAIT_SPL", "MAX_MIGRATIONS", "MAX_NUMBER", "MAX_SOLVER_TIME_LIMIT_S",
           "STRATEGY_NAMES", "UNIT_SETS", "Rule", "Scalar", "check_max_migrations", "parse_duration",
           "shown"]

Scalar: TypeAlias = int | float | str | bool
# The strategies' names, from their one table (schemas/strategies.py, which the registry reads).
STRATEGY_NAMES = frozenset(STRATEGIES)
#: the values of a job's `units` field
UNIT_SETS = ("fixed", "dynamic")
#: The largest migration budget a job may give (larger is the same as "every key group").
MAX_MIGRATIONS = 2**31 - 1
#: The most catch-up periods a job may ask for, and the longest landing wait, in SPLs.
MAX_CATCHUP_PERIODS, MAX_LANDING_WAIT_SPL = 1000, 10
#: The longest a plan may wait for its approval (approval_timeout): a run waits with it, and the
#: job's later periods queue behind that run (max_active_runs = 1).
MAX_APPROVAL_TIMEOUT = timedelta(days=7)
#: The highest utilisation ceiling (%) a job may set for its waves.
MAX_CEILING_PCT = 1000.0
#: Bounds that keep every value the config gives computable wherever it goes (a timedelta, a
#: date on the job's grid, a float sum, a DAG's timeouts): a number field at most MAX_NUMBER
#: (the lake's count bound, schemas/limits.py COUNT_MAX), a duration (spl, landing_timeout,
#: healing.min_gap) at most MAX_DURATION, a count of periods or cycles at most MAX_CYCLES, the
#: solver's safety net at most MAX_SOLVER_TIME_LIMIT_S. Past them Python raised OverflowError
#: (a 400-digit integer, "99999999999999d", 1e308 seconds) instead of naming the field.
MAX_NUMBER = 1e18
MAX_DURATION = timedelta(days=366)
MAX_CYCLES = 1_000_000
MAX_SOLVER_TIME_LIMIT_S = 86_400.0
_JOB_ID = re.compile(r"^[a-z0-9][a-z0-9_-]{0,62}$")
_DURATION = re.compile(r"^\s*(\d+)\s*(s|m|h|d)\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}


class Rule(ValueError):
    """Broken rules: (path below the validated field, rule text) pairs; pydantic keeps the
    exception in its error's context, so the loader reads the pairs back."""

    def __init__(self, rule: str, *at: str) -> None:
        super().__init__(rule)
        self.found: list[tuple[tuple[str, ...], str]] = [(at, rule)]

    @classmethod
    def many(cls, found: list[tuple[tuple[str, ...], str]]) -> Rule:
        error = cls(found[0][1], *found[0][0])
        error.found = found
        return error


def shown(value: object) -> str:
    """`value`'s repr for an error message, a long one cut in the middle (a 400-digit integer
    would otherwise fill the operator's screen and the Airflow import error)."""
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:12]}…{text[-6:]} ({len(text)} characters)"


def job_id(value: object) -> str:
    """Lower-case letters, digits, '-' or '_', at most 63, the first a letter or a digit."""
    if not isinstance(value, str) or not _JOB_ID.match(value):
        raise Rule("job id must be lower-case letters, digits, '-' or '_' (at most 63)")
    return value


def duration(value: object, most: timedelta = MAX_DURATION, too_long: str = "") -> timedelta:
    """'5m', '300s', '1h', '1d' or a number of seconds; positive and at most MAX_DURATION.

    A caller may give another maximum, `most`; it is checked before a timedelta is built (past
    about 2.7 million years it cannot be)."""
    seconds: int | float
    if isinstance(value, timedelta):
        seconds = value.total_seconds()
    elif isinstance(value, bool):
        raise Rule(f"must be a duration like '5m' or '300s', got {shown(value)}")
    elif isinstance(value, int | float):
        seconds = value  # an int stays exact: float() of 400 digits overflows
    elif isinstance(value, str) and (m := _DURATION.match(value)):
        seconds = int(m.group(1)) * _SECONDS[m.group(2)]
    else:
        raise Rule(f"must be a duration like '5m' or '300s', got {shown(value)}")
    if (isinstance(seconds, float) and not math.isfinite(seconds)) or seconds <= 0:
        raise Rule(f"must be a positive duration, got {shown(value)}")
    if seconds > most.total_seconds():
        raise Rule(too_long or f"must be at most {most.days} days, got {shown(value)}")
    out = timedelta(seconds=seconds)
    if not out:  # below a microsecond, a timedelta is 0: a period grid would divide by it
        raise Rule(f"must be a positive duration (at least a microsecond), got {shown(value)}")
    return out


def parse_duration(value: object, where: str) -> timedelta:
    """`duration` for a caller outside the job table: ConfigError naming `where`."""
    try:
        return duration(value)
    except Rule as exc:
        raise ConfigError(f"{where}: {exc}") from None


def number(value: object, *, integer: bool = False) -> float:
    """A finite number from 0 to MAX_NUMBER.

    With `integer`, a whole one."""
    ok = isinstance(value, int) if integer else isinstance(value, int | float)
    if isinstance(value, bool) or not ok:
        raise Rule(f"must be {'a whole number' if integer else 'a number'}, got {shown(value)}")
    value = cast(int | float, value)
    if (isinstance(value, float) and not math.isfinite(value)) or value < 0:
        raise Rule(f"must be >= 0, got {shown(value)}")
    if value > MAX_NUMBER:  # compared before float(): an int of 400 digits has none
        raise Rule(f"must be at most {MAX_NUMBER:g}, got {shown(value)}")
    return float(value)


def whole(value: object) -> int:
    """A whole number from 0 to MAX_NUMBER."""
    return int(number(value, integer=True))


def at_least_one(value: object) -> int:
    """A whole number >= 1 (a concurrency or a count of moves)."""
    count = whole(value)
    if count < 1:
        raise Rule(f"must be a whole number >= 1 (leave it out for no limit), got {value!r}")
    return count


def ceiling_pct(value: object) -> float:
    """A node utilisation ceiling in % of the node's capacity, in (0, MAX_CEILING_PCT]."""
    pct = number(value)
    if not 0 < pct <= MAX_CEILING_PCT:
        raise Rule(f"must be a utilisation in % of a node's capacity, above 0 and at most "
                   f"{MAX_CEILING_PCT} (100 = full), got {value!r}")
    return pct


def count(value: object) -> int:
    """A whole number >= 1 that has a default (a budget of moves, a number of nodes)."""
    found = whole(value)
    if found < 1:
        raise Rule(f"must be a whole number >= 1, got {value!r}")
    return found


def over_capacity_pct(value: object) -> float:
    """A utilisation in % of a node's capacity above full (100), at most MAX_CEILING_PCT."""
    pct = number(value)
    if not 100 < pct <= MAX_CEILING_PCT:
        raise Rule(f"must be a utilisation in % of a node's capacity above 100 (full) and at "
                   f"most {MAX_CEILING_PCT}, e.g. 150, got {value!r}")
    return pct


def positive(value: object) -> float:
    """A number > 0, at most MAX_NUMBER."""
    limit = number(value)
    if limit <= 0:
        raise Rule(f"must be > 0, got {limit!r}")
    return limit


def solver_time_limit(value: object) -> float:
    """The solver's safety net in seconds (a plan stops on its work budget first), at most
    MAX_SOLVER_TIME_LIMIT_S: the plan task's timeout is derived from it."""
    if (isinstance(value, int | float) and not isinstance(value, bool)
            and value > MAX_SOLVER_TIME_LIMIT_S):
        raise Rule(f"must be at most {MAX_SOLVER_TIME_LIMIT_S:g} s (one day), got {shown(value)}")
    return positive(value)


def budget(value: object) -> int:
    """A migration budget: a whole number in [0, MAX_MIGRATIONS]."""
    if isinstance(value, int) and not isinstance(value, bool) and value > MAX_MIGRATIONS:
        count: float | int = value  # beyond float's range possibly: compared as an int
    else:
        count = number(value, integer=True)
    if count != int(count) or not 0 <= count <= MAX_MIGRATIONS:
        raise Rule(f"must be a whole number from 0 to {MAX_MIGRATIONS} "
                   f"(a budget above the job's key-group count moves any), got "
                   f"{shown(float(count) if count <= MAX_NUMBER else count)}")
    return int(count)


def check_max_migrations(value: float, where: str) -> int:
    """A migration budget: a whole number in [0, MAX_MIGRATIONS] (ConfigError otherwise)."""
    try:
        return budget(value)
    except Rule as exc:
        raise ConfigError(f"{where}: {exc}") from None


def cycles(value: object) -> int:
    """A whole number of periods or cycles from 0 to MAX_CYCLES."""
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        raise Rule(f"must be >= 0 cycles, got {value!r}")
    if isinstance(value, int) and not isinstance(value, bool) and value > MAX_CYCLES:
        raise Rule(f"must be at most {MAX_CYCLES} periods, got {shown(value)}")
    return whole(value)


def fraction(value: object) -> float:
    """A fraction of a node's capacity in (0, 1] (0.8 = 80 %)."""
    got = value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if got is None or not (0 < got <= 1):
        raise Rule(f"must be a fraction of capacity in (0, 1] (0.8 = 80 %), got {shown(value)}")
    return float(got)


def strategy(value: object) -> str:
    """One of the strategies' names (schemas/strategies.py)."""
    if not isinstance(value, str) or not value:
        raise Rule(f"must be a strategy name, got {value!r}")
    if value not in STRATEGY_NAMES:
        raise Rule(f"unknown strategy {value!r}; known: {', '.join(sorted(STRATEGY_NAMES))}")
    return value


def start_date(value: object) -> datetime:
    """A TOML date-time; one without a zone is taken as UTC."""
    if not isinstance(value, datetime):
        raise Rule(f"must be a TOML date-time, got {value!r}")
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def table(value: object) -> dict[str, Any]:
    """A TOML table."""
    if not isinstance(value, Mapping):
        raise Rule(f"must be a table, got {value!r}")
    return dict(value)


def units(value: object) -> str:
    """"fixed" or "dynamic" (UNIT_SETS)."""
    if value not in UNIT_SETS:
        raise Rule("must be \"fixed\" (every key group present every period) or \"dynamic\" "
                   f"(units arrive and leave between periods), got {value!r}")
    return str(value)


def topology(value: object) -> str:
    """A topology file that exists (its contents are checked when the plan stage loads it)."""
    if not isinstance(value, str) or not value:
        raise Rule(f"must be the path of a topology file, got {value!r}")
    path = Path(value) if Path(value).is_absolute() else PROJECT_ROOT / value
    if not path.is_file():
        raise Rule(f"no topology file at {path}; give a .toml or .json file "
                   "(docs/algorithms.md, SPRAWL)")
    return str(path)


def shadow_strategies(value: object) -> tuple[str, ...] | None:
    """A list of strategy names ([] = no shadows), or "auto" (every strategy the state suits)."""
    if value == "auto" or value is None:
        return None
    if not isinstance(value, list | tuple) or not all(isinstance(s, str) for s in value):
        raise Rule("must be a list of strategy names (e.g. [\"albic\", \"greedy\"]), [] for "
                   f"none, or \"auto\"; got {value!r}")
    unknown = sorted(set(value) - STRATEGY_NAMES)
    if unknown:
        raise Rule(f"unknown strategy {', '.join(map(repr, unknown))}; known: "
                   f"{', '.join(sorted(STRATEGY_NAMES))}")
    return tuple(dict.fromkeys(value))


def _file_spl(info: ValidationInfo) -> timedelta | None:
    """The job's SPL, for a rule relative to it: only for a config file's table (the loader passes
    a context), as a job built in code (a bench's, a `dataclasses.replace`) keeps its defaults."""
    spl = info.data.get("spl")
    return spl if info.context is not None and isinstance(spl, timedelta) else None


def shadow_budget(value: object, info: ValidationInfo) -> float:
    """Wall time of a period's shadow plans: at most half the period (they run after publish)."""
    seconds = number(value)
    spl = _file_spl(info)
    if spl is not None and seconds > spl.total_seconds() / 2:
        raise Rule(f"{seconds:g} s is more than half the period ({spl}); shadow plans run after "
                   "publish and must leave the next cycle room: lower it (0 turns shadows off)")
    return seconds


def catchup_periods(value: object) -> int:
    """A whole number of periods from 0 to MAX_CATCHUP_PERIODS."""
    if (isinstance(value, bool) or not isinstance(value, int)
            or not 0 <= value <= MAX_CATCHUP_PERIODS):
        raise Rule(
            f"must be a whole number of periods from 0 to {MAX_CATCHUP_PERIODS} (how many missed "
            "periods run when several are due at once; 0 = none, only periods that end from now "
            f"on), got {shown(value)}")
    return value


def flag(value: object) -> bool:
    """A TOML boolean (`true` / `false`), never a string or a number that looks like one."""
    if not isinstance(value, bool):
        raise Rule(f"must be true or false, got {value!r}")
    return value


def approval_timeout(value: object) -> timedelta:
    """A duration as for `spl`, at most MAX_APPROVAL_TIMEOUT: how long the approval step
    waits for a human (docs/operations.md, "Approval")."""
    too_long = (f"{shown(value)} is more than {MAX_APPROVAL_TIMEOUT.days} days; the job's "
                "later periods queue behind a run that waits for approval: use at most that "
                "(default: '1h')")
    return duration(value, most=MAX_APPROVAL_TIMEOUT, too_long=too_long)


def landing_timeout(value: object, info: ValidationInfo) -> timedelta | None:
    """How long a run waits for its landing: at most MAX_LANDING_WAIT_SPL periods."""
    if value is None:
        return None
    wait = duration(value)
    spl = _file_spl(info)
    if spl is not None and wait > MAX_LANDING_WAIT_SPL * spl:
        raise Rule(
            f"{shown(value)} is more than {MAX_LANDING_WAIT_SPL} periods ({MAX_LANDING_WAIT_SPL * spl}); "
            "runs go one at a time, so later periods would queue behind the wait: use at most "
            "that (default: one SPL)")
    return wait


def strategy_params(value: object, info: ValidationInfo) -> dict[str, dict[str, Scalar]]:
    """`[jobs.<id>.strategy_params.<strategy>]` tables, each checked against its strategy's
    params class (schemas/params.py): an unknown strategy or parameter, a wrong type or an
    out-of-range value names the field and the rule."""
    from schemas.params import params_class, problems

    if not isinstance(value, Mapping):
        raise Rule(f"must be a table of per-strategy tables, e.g. [jobs.{info.data.get('job_id')}"
                   f".strategy_params.albic] with max_pl = 20; got {value!r}")
    out: dict[str, dict[str, Scalar]] = {}
    for name, params in value.items():
        name = str(name)
        if not isinstance(params, Mapping):
            raise Rule(f"must be a table of parameters (e.g. {{ s_f = 1.5 }}), got {params!r}",
                       name)
        for key, given in params.items():
            if not isinstance(given, int | float | str | bool):
                raise Rule(f"must be a number, string or boolean, got {shown(given)}", name, key)
            if (isinstance(given, int | float) and not isinstance(given, bool)
                    and abs(given) > MAX_NUMBER):  # before the params class's float()
                raise Rule(f"must be at most {MAX_NUMBER:g} in size, got {shown(given)}",
                           name, key)
        if name not in STRATEGIES:
            raise Rule(f"unknown strategy {name!r}; known: {', '.join(sorted(STRATEGIES))}", name)
        for key in params:
            if key in PIPELINE_PARAMS:
                raise Rule(f"set by the job's {PIPELINE_PARAMS[key]!r}, not as a strategy "
                           "parameter", name, key)
        found = problems(params_class(name), params)
        if found:
            raise Rule.many([((name, field), rule) for field, rule in found])
        out[name] = dict(params)
    return out
