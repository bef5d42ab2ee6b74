"""No plan status is spelled as a bare string outside schemas/attempts.py (`PlanStatus`).

A status that a writer spells and a reader spells again drifts apart silently: a typo reads as
"some other status" and a new status goes unhandled. So the pipeline's packages name statuses by
`PlanStatus` only. The scan reads the source (every string constant, the parts of f-strings
included) and fails on one that is a status's value, or that holds one as a SQL literal
(`status = 'published'`). Not statuses, so not counted: docstrings, dict keys and subscripts
(a record's field named like a status, `row["published"]`), path segments (`home / "published"`)
and the members of an enum (another vocabulary that shares a word, e.g. `CycleState`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

from schemas.attempts import PlanStatus

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("jobs", "schemas", "reconf", "dags", "runtime")
HOME = ROOT / "schemas" / "attempts.py"
_VALUES = frozenset(PlanStatus)
_SQL = re.compile("'(" + "|".join(map(re.escape, sorted(_VALUES))) + ")'")
#: words that read like a status and are not one, each with how often its file may hold it
ALLOWED = {
    ("reconf/compare.py", "planned"): 1,  # a column heading: the periods a strategy planned
}


def _is_enum(node: ast.ClassDef) -> bool:
    names = (b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else ""
             for b in node.bases)
    return any(name.endswith("Enum") for name in names)


def _exempt(tree: ast.AST) -> set[int]:
    """The ids of the constants that are not values (see the module's docstring)."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Expr):
            out.add(id(node.value))  # a docstring, or any other bare string statement
        elif isinstance(node, ast.Dict):
            out.update(id(k) for k in node.keys if k is not None)
        elif isinstance(node, ast.Subscript):
            out.add(id(node.slice))
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            out.update((id(node.left), id(node.right)))
        elif isinstance(node, ast.ClassDef) and _is_enum(node):
            out.update(id(s.value) for s in node.body if isinstance(s, ast.Assign))
    return out


def bare_statuses(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of each status spelled as a string in `source`."""
    tree = ast.parse(source)
    exempt = _exempt(tree)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in exempt
                and (node.value in _VALUES or _SQL.search(node.value))):
            yield node.lineno, node.value


def test_the_scan_finds_a_bare_status_and_passes_the_rest() -> None:
    source = '''
"""A docstring may say 'published'."""
from enum import StrEnum
class Other(StrEnum):
    PUBLISHED = "published"
def f(row, home, lake):
    lake.update({"status": "stale"})
    sql = f"SELECT * FROM t WHERE status = 'planned' AND job = {row}"
    seen = row["published"], home / "published", {"historical": 1}
    return row.get("status") == "not_published", "not published"
'''
    found = sorted(bare_statuses(source))
    assert [line for line, _ in found] == [7, 8, 10], found
    assert found[0][1] == "stale" and found[2][1] == "not_published"


def test_no_bare_status_in_the_pipeline() -> None:
    found: dict[tuple[str, str], list[int]] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path != HOME:
                for line, text in bare_statuses(path.read_text()):
                    found.setdefault((str(path.relative_to(ROOT)), text), []).append(line)
    bad = [f"{where}:{line}: {text!r}" for (where, text), lines in sorted(found.items())
           if len(lines) != ALLOWED.get((where, text), 0) for line in lines]
    gone = [key for key in ALLOWED if key not in found]
    assert not bad, "spell these as schemas.attempts.PlanStatus members:\n" + "\n".join(bad)
    assert not gone, f"allowed but no longer there (drop them from ALLOWED): {gone}"
