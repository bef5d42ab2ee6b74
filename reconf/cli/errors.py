"""How `reconf` ends on an error: bad input (a `ReconfError`, exit 2) with its what/where/fix
lines, an unexpected failure (exit 1) with its traceback in a private file, or a reader that
went away (`reconf audit … | head -1`): quietly, exit 141, as a standard tool that SIGPIPE ends."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

__all__ = ["STDOUT_CLOSED", "bad_input", "check_reasons", "closed_stdout", "internal_error",
           "save_traceback"]

#: every option that takes an operator's reason, whatever the command (schemas/reasons.py)
REASON_OPTIONS = {"reason": "--reason", "override_budget": "--override-budget"}


def check_reasons(args: argparse.Namespace) -> None:
    """Every reason option the command was given, held to the one rule (schemas/reasons.py):
    a ReasonError naming the option, before the command writes anything."""
    from schemas.reasons import check_reason

    for attr, option in REASON_OPTIONS.items():
        value = getattr(args, attr, None)
        if isinstance(value, str):
            check_reason(value, option)

#: the exit status of a command whose stdout's reader went away: 128 + SIGPIPE (13), what a shell
#: reports for `cat big | head -1`'s cat, so `set -o pipefail` scripts see reconf as any tool
STDOUT_CLOSED = 141


def closed_stdout() -> int:
    """End quietly after the reader of stdout went away: nothing on stderr (the reader chose to
    stop; it is no failure of reconf), and stdout pointed at /dev/null so that the interpreter's
    own flush at exit does not raise the same error again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # a stdout without a file descriptor
        pass
    return STDOUT_CLOSED


def bad_input(args: argparse.Namespace, exc: Exception) -> str:
    """A bad-input error as what/where/fix like every other exit 2: as raised when it gives its
    where and fix (a StageError, a PeriodError), else where is the file or field the message
    starts with (config and manifest errors name it first), or the command and its job and
    period."""
    text = str(exc).strip() or type(exc).__name__
    if "\n  where:" in text and "\n  fix:" in text:
        return text
    head, sep, rest = text.partition(": ")
    located = sep and rest and " " not in head.strip()  # "path: problem" or "jobs.x.y: problem"
    where = head if located else " ".join(
        [f"reconf {args.command}"] + [f"--{k.replace('_', '-')} {v}" for k, v in
                                      (("job", getattr(args, "job", None)),
                                       ("period_end", getattr(args, "period_end", None))) if v])
    what = text  # whole: the field or file it starts with is also the where line
    if _in_job_config(exc, where):
        return f"{what}\n  where: {where}\n  fix:   {CONFIG_FIX}"
    help_cmd = f"reconf {args.command} --help"
    return (f"{what}\n  where: {where}\n  fix:   correct what is named there and run the "
            f"command again (`{help_cmd}` lists its arguments; docs/operations.md, \"Bad "
            f"input\")")


#: The fix of a job-config error: where the fields are explained, and the command that checks
#: the file without running anything (a command's --help does not list config fields).
CONFIG_FIX = ("edit the job config (config/jobs.toml, or the file $RECONF_CONFIG names) where "
              "named: its header comment and README.md \"Configuration\" list the fields, "
              "docs/algorithms.md each strategy's parameters; `reconf jobs` checks every "
              "job's fields and lists the jobs")


def _in_job_config(exc: Exception, where: str) -> bool:
    """A `ConfigError` located in the job config (its file, or a `jobs.<id>` field), not in an
    environment variable such as RECONF_DB_URI or a port, whose message already says what to
    set."""
    from schemas.errors import ConfigError

    return isinstance(exc, ConfigError) and not where.startswith(("RECONF_", "reconf "))


def internal_error(command: str, exc: BaseException) -> int:
    """Not bad input but a failure nobody foresaw: one message, the traceback in a private file."""
    import traceback

    try:
        log = save_traceback(command, "".join(traceback.format_exception(exc)))
        kept = f"the full traceback is in {log}"
    except (OSError, ValueError):
        kept = "the traceback could not be saved"
    first = (str(exc).strip().splitlines() or [""])[0][:300]
    print(f"reconf {command}: unexpected error: {type(exc).__name__}: {first}\n"
          f"  where: reconf {command}\n"
          f"  fix:   nothing half-written is left for a rerun to trip on; run the command again, "
          f"and if it fails the same way, report it with the log ({kept})", file=sys.stderr)
    return 1


def save_traceback(command: str, text: str) -> Path:
    """Write `text` to a new file under RECONF_HOME/logs/, readable by its owner only.

    A traceback may quote paths, configuration and data, so it never goes to a shared, fixed
    name such as /tmp/reconf-<cmd>-error.log: the directory is created 0700, the file with
    ``O_CREAT | O_EXCL | O_NOFOLLOW`` and mode 0600 under a fresh name, so a planted file or
    symbolic link is never written through.
    """
    import os
    import time

    from schemas.config import Paths

    logs = Paths.from_env().home / "logs"
    logs.mkdir(mode=0o700, parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    path = logs / f"reconf-{command}-error-{stamp}-{os.getpid()}.log"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)
    return path
