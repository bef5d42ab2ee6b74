"""An operator's reason: the one rule for every place one is taken, and how one is printed.

A reason (`reconf stop --reason`, `reconf rollback --reason` and `--override-budget`, `reconf
period lost --reason`, `reconf health report --reason`, the rollback DAG's params) is kept in a
flag file, a period record, the plans table, an MLflow tag and a manifest, and printed back by
`reconf audit` and `reconf period show`. So it must be text each of them stores whole:

- UTF-8: an argument of other bytes reaches Python as lone surrogates, which the stop flag's
  JSON took as escapes while the lake and MLflow failed on them ("'utf-8' codec can't encode
  characters…" without naming the option);
- no control characters but newlines and tabs (an escape sequence would rewrite the operator's
  terminal when the audit prints it);
- at most REASON_MAX_CHARS characters: half of MLflow's 8,000-character tag value, so the run
  keeps it whole next to the plans table (a 10 kB reason was cut there with only a warning);
  a longer account belongs in a ticket the reason names.

Printed, a reason's line breaks are indented under the line it starts on and any other control
character is escaped (`shown_reason`), whatever wrote it (an older run, the DAG's form).
"""

from __future__ import annotations

from schemas.errors import ReconfError

__all__ = ["REASON_MAX_CHARS", "ReasonError", "check_reason", "shown_reason"]

#: the longest reason reconf takes, in characters
REASON_MAX_CHARS = 4000

_ALLOWED_CONTROL = {"\n", "\t"}


class ReasonError(ReconfError, ValueError):
    """A reason that breaks the rule; the message starts with the option or param named."""


def _control(c: str) -> bool:
    code = ord(c)
    return (code < 32 or 0x7F <= code < 0xA0) and c not in _ALLOWED_CONTROL


def check_reason(text: str, option: str, *, where: str = "the command line") -> str:
    """`text` if it keeps the rule (module docstring), else ReasonError naming `option` (the
    flag, or the DAG param, the operator typed it as). Empty is allowed: whether a reason is
    required is the command's rule."""
    bad = next((i for i, c in enumerate(text) if 0xD800 <= ord(c) <= 0xDFFF), None)
    if bad is not None:
        raise ReasonError(
            f"{option}: not UTF-8 text (an undecodable byte at character {bad + 1})",
            where=where, fix="give the reason as UTF-8 text (check the terminal's or the "
            "script's encoding, e.g. `locale`, LANG=C.UTF-8)")
    control = next((i for i, c in enumerate(text) if _control(c)), None)
    if control is not None:
        raise ReasonError(
            f"{option}: a control character ({text[control]!r}) at character {control + 1}",
            where=where, fix="write the reason as plain text: newlines and tabs are kept, other "
            "control characters are not")
    if len(text) > REASON_MAX_CHARS:
        raise ReasonError(
            f"{option}: {len(text)} characters, more than {REASON_MAX_CHARS}", where=where,
            fix=f"shorten it to at most {REASON_MAX_CHARS} characters; a longer account belongs "
            "in a ticket or document the reason names")
    return text


def shown_reason(text: str, indent: str) -> str:
    """`text` for a terminal: each line break (\\n, \\r\\n or \\r) becomes a newline and
    `indent`, so the reason's later lines sit under the line it starts on, and every other
    control character is escaped (\\x1b, \\t stays visible as \\t)."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")

    def safe(line: str) -> str:
        return "".join(c.encode("unicode_escape").decode("ascii")
                       if ord(c) < 32 or 0x7F <= ord(c) < 0xA0 or 0xD800 <= ord(c) <= 0xDFFF
                       else c for c in line)

    return f"\n{indent}".join(safe(line) for line in lines)
