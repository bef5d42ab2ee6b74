"""Each folder imports only what docs/architecture.md's map says it may ("The map").

The rules are read from the map's two tables (folder → responsibility → may import), so the page
and the code cannot drift apart: an import outside its folder's row fails here, naming the module,
the import and the row. The import graph is `test_import_graph`'s (every import in the source,
inside functions too, outside `if TYPE_CHECKING:`).
"""

from __future__ import annotations

import ast
import re

import pytest
from test_import_graph import ROOT, import_graph

MAP = ROOT / "docs" / "architecture.md"
_ROW = re.compile(r"^\|\s*(`[^|]+`)\s*\|[^|]*\|\s*([^|]+?)\s*\|\s*$")


def _name(cell: str) -> str:
    """`jobs/lake/` -> jobs.lake; `jobs/run.py` -> jobs.run; `jobs.errors` stays."""
    return cell.strip().strip("/").removesuffix(".py").replace("/", ".")


def layer_rules(text: str) -> dict[str, frozenset[str]]:
    """Folder or module -> the names it may import, from the map's table rows."""
    section = text.split("## The map", 1)[1].split("\n## ", 1)[0]
    rules: dict[str, frozenset[str]] = {}
    for line in section.splitlines():
        if not (m := _ROW.match(line)):
            continue
        allowed = frozenset(_name(n) for n in re.findall(r"`([^`]+)`", m.group(2)))
        if m.group(2).strip() not in ("—", "-") and not allowed:
            raise AssertionError(f"map row without backticked names: {line}")
        for folder in re.findall(r"`([^`]+)`", m.group(1)):
            rules[_name(folder)] = allowed
    return rules


def _within(module: str, name: str) -> bool:
    return module == name or module.startswith(name + ".")


def _row(module: str, rules: dict[str, frozenset[str]]) -> str | None:
    """The most specific row of `module` (a folder without a row falls back to its parent's)."""
    found = [key for key in rules if _within(module, key)]
    return max(found, key=len) if found else None


def violations(graph: dict[str, set[str]], rules: dict[str, frozenset[str]]) -> list[str]:
    out = []
    for module, targets in sorted(graph.items()):
        row = _row(module, rules)
        if row is None:
            continue
        home = module.split(".")[0]
        for target in sorted(targets):
            own = _within(target, row) or (_row(target, rules) == row)
            parent = _within(module, target)  # its own package's __init__
            # a folder without a row of its own (a new one) may import any of its top package
            fallback = row == home and _within(target, home)
            allowed = any(_within(target, name) for name in rules[row])
            if not (own or parent or fallback or allowed):
                out.append(f"{module} imports {target}: its row `{row}` allows "
                           f"{', '.join(sorted(rules[row])) or 'nothing of ours'}")
    return out


def test_the_map_has_a_row_for_every_package() -> None:
    rules = layer_rules(MAP.read_text())
    for package in ("schemas", "placement", "runtime", "jobs", "dags", "bench", "reconf"):
        assert package in rules, f"docs/architecture.md's map has no row for {package}/"
    assert rules["schemas"] == frozenset()
    assert rules["placement"] == {"schemas"}
    assert not any(_within(n, p) for n in rules["runtime"] for p in ("jobs", "placement"))


def test_every_import_stays_within_its_row() -> None:
    found = violations(import_graph(), layer_rules(MAP.read_text()))
    assert found == [], ("imports outside docs/architecture.md's map (move the code, or change "
                         "the map if the layering is meant to change):\n" + "\n".join(found))


def test_the_checker_finds_a_layer_breach() -> None:
    rules = layer_rules("## The map\n| `a/` | x | `b` |\n| `b/` | y | — |\n| `a/c/` | z | `b.d` |\n")
    assert rules == {"a": {"b"}, "b": frozenset(), "a.c": {"b.d"}}
    graph = {"a.x": {"b.y", "a.c"}, "b.y": {"a.x"}, "a.c.k": {"b.d", "b.e"}, "a.n.m": {"a.x"}}
    assert violations(graph, rules) == [
        "a.c.k imports b.e: its row `a.c` allows b.d",
        "b.y imports a.x: its row `b` allows nothing of ours",
    ]


@pytest.mark.parametrize("path", sorted((ROOT / "dags").glob("*.py")), ids=lambda p: p.name)
def test_a_dag_file_imports_only_contracts_and_light_helpers_at_parse_time(path) -> None:
    """The scheduler parses DAG files often: at module level they import `schemas` and the
    light `reconf` helpers (timetable, landing wait, MLflow link), never a stage or a planner;
    a task imports its stage when it runs (tests/test_dag_file.py checks no numpy is loaded)."""
    tree = ast.parse(path.read_text())
    ours = ("jobs", "placement", "runtime", "bench", "reconf", "schemas", "dags")
    top = [alias.name if isinstance(node, ast.Import) else node.module or ""
           for node in tree.body if isinstance(node, ast.Import | ast.ImportFrom)
           for alias in node.names]
    project = [name for name in top if name.split(".")[0] in ours]
    assert all(name.split(".")[0] in ("schemas", "reconf") for name in project), project
