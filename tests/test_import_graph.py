"""The project's packages import each other without cycles, and each layer only what it may.

The graph is read from the source (every `import`, at module level or inside a function, outside
`if TYPE_CHECKING:` blocks), so a lazy import cannot hide a cycle. docs/architecture.md has the
table of folders and what each may import; the layer rules below are that table's.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("reconf", "jobs", "placement", "schemas", "runtime", "bench", "dags")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            found[_module_name(path)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and _is_type_checking(node):
            yield from (name for child in node.orelse for name in _imports(child, module, is_package))
            continue
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield base
            yield from (f"{base}.{alias.name}" for alias in node.names)
        yield from _imports(node, module, is_package)


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports (a package import counts as its `__init__`)."""
    modules = _modules()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        tree = ast.parse(path.read_text(), str(path))
        targets = {t for t in _imports(tree, name, path.name == "__init__.py") if t in modules}
        graph[name] = targets - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_cycle() -> None:
    found = cycles(import_graph())
    assert found == [], "import cycles (break each by moving the shared part down a layer):\n" + \
        "\n".join(" <-> ".join(c) for c in found)


def test_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def placement_families() -> frozenset[str]:
    """The folders of placement/: one family each (a paper's strategies, or the workloads);
    the modules directly in placement/ are the core every family may import."""
    return frozenset(p.name for p in (ROOT / "placement").iterdir() if (p / "__init__.py").exists())


def family_crossings(graph: dict[str, set[str]], families: frozenset[str]) -> list[str]:
    """'importer -> imported' for each import from one placement family into another."""
    def family(module: str) -> str | None:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 and parts[0] == "placement" and parts[1] in families \
            else None

    return sorted(f"{m} -> {t}" for m, targets in graph.items() if (own := family(m))
                  for t in targets if family(t) not in (None, own))


def test_no_placement_family_imports_another() -> None:
    # shared solver helpers live in the core (placement/heuristics.py, mip.py, highs.py,
    # params.py); a strategy that builds on another calls it by name (registry.run_inner)
    found = family_crossings(import_graph(), placement_families())
    assert found == [], "a placement family imports another (move the shared part to the " \
        "placement core, or call the other strategy through the registry):\n" + "\n".join(found)


def test_the_family_rule_finds_a_crossing() -> None:
    families = frozenset({"milp", "albic"})
    graph = {"placement.albic.core": {"placement.milp.core", "placement.common"},
             "placement.milp.core": {"placement.milp.model", "placement.heuristics"},
             "placement.registry": {"placement.albic.core"}}
    assert family_crossings(graph, families) == ["placement.albic.core -> placement.milp.core"]
    assert {"milp", "albic", "herding", "workloads"} <= placement_families()
