"""No import circles in engine/ (issue 35 item 3): an AST scan of every module's imports, cycles reported by name.

Why a scan of our own and not only import-linter: import-linter's layers forbid imports across layers, but two
modules of one layer (or one package) may still import each other, and it does not see imports made inside
functions. Here every ``import`` counts, in three kinds: at module level (run on import), deferred (inside a
function: run later, the usual way to dodge a cycle) and under ``if TYPE_CHECKING:`` (for the type checker only).
A cycle is a strongly connected component of more than one module (or a module importing itself) in the graph of
one kind of edge and those below it: runtime, runtime + deferred, all. Each count is a ratchet and ends at 0.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = "engine"
KINDS = ("runtime", "deferred", "type_checking")
# Today's counts, per graph (runtime edges; + deferred ones; + TYPE_CHECKING ones): they may only go down.
MAX_CYCLES = {"runtime": 0, "deferred": 0, "type_checking": 0}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def all_modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted((ROOT / PACKAGE).rglob("*.py")) if "__pycache__" not in p.parts}


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(tree: ast.AST, kind: str) -> Iterable[tuple[ast.Import | ast.ImportFrom, str]]:
    """Each import statement under ``tree`` with its kind (a function body makes it deferred, a TYPE_CHECKING
    block makes it type_checking)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, kind
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            yield from _imports(node, "type_checking" if kind == "type_checking" else "deferred")
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.body:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), "type_checking")
            for child in node.orelse:
                yield from _imports(ast.Module(body=[child], type_ignores=[]), kind)
        else:
            yield from _imports(node, kind)


def _targets(node: ast.Import | ast.ImportFrom, here: str, is_package: bool, known: set[str]) -> set[str]:
    """The engine modules an import statement loads (``from a import b`` is module ``a.b`` when that exists)."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in known}
    base = node.module or ""
    if node.level:
        anchor = here.split(".") if is_package else here.split(".")[:-1]
        anchor = anchor[: len(anchor) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    out = set()
    for alias in node.names:
        sub = f"{base}.{alias.name}"
        if sub in known:
            out.add(sub)
        elif base in known:
            out.add(base)
    return out


def import_graph() -> dict[str, dict[str, set[str]]]:
    """module -> kind -> the engine modules it imports (the strongest kind wins: runtime over deferred over
    TYPE_CHECKING)."""
    modules = all_modules()
    known = set(modules)
    graph: dict[str, dict[str, set[str]]] = {}
    for name, path in modules.items():
        edges: dict[str, set[str]] = {k: set() for k in KINDS}
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node, kind in _imports(tree, "runtime"):
            edges[kind] |= _targets(node, name, path.name == "__init__.py", known) - {name}
        edges["deferred"] -= edges["runtime"]
        edges["type_checking"] -= edges["runtime"] | edges["deferred"]
        graph[name] = edges
    return graph


def cycles(graph: dict[str, dict[str, set[str]]], kinds: tuple[str, ...]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative), each sorted, sorted."""
    succ = {m: sorted(set().union(*(e[k] for k in kinds))) for m, e in graph.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(succ):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = len(index)
                stack.append(node)
                on_stack.add(node)
            if i < len(succ[node]):
                work.append((node, i + 1))
                nxt = succ[node][i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                comp = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    comp.append(m)
                    if m == node:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return sorted(found)


def _report(found: list[list[str]]) -> str:
    return "\n".join(" <-> ".join(c) for c in found)


def test_the_scan_sees_every_kind_of_import(tmp_path: Path) -> None:
    """The scan itself: a module-level, a deferred and a TYPE_CHECKING import each land in their own kind."""
    src = (
        "from typing import TYPE_CHECKING\nimport engine.a\nif TYPE_CHECKING:\n    from engine import b\n"
        "def f():\n    from engine.c import x\n"
    )
    found: dict[str, set[str]] = {k: set() for k in KINDS}
    for node, kind in _imports(ast.parse(src), "runtime"):
        found[kind] |= _targets(node, "engine.z", False, {"engine.a", "engine.b", "engine.c"})
    assert found == {"runtime": {"engine.a"}, "type_checking": {"engine.b"}, "deferred": {"engine.c"}}
    graph = {
        "a": {"runtime": {"b"}, "deferred": set(), "type_checking": set()},
        "b": {"runtime": set(), "deferred": {"a"}, "type_checking": set()},
        "c": {"runtime": set(), "deferred": set(), "type_checking": {"c"}},
    }
    assert cycles(graph, ("runtime",)) == []
    assert cycles(graph, ("runtime", "deferred")) == [["a", "b"]]


def test_no_more_import_cycles_than_allowed() -> None:
    graph = import_graph()
    counts: dict[str, int] = {}
    reports: list[str] = []
    for n, kind in enumerate(KINDS, 1):
        found = cycles(graph, KINDS[:n])
        counts[kind] = len(found)
        reports.append(f"{kind} ({len(found)}):\n{_report(found)}")
    over = {k: n for k, n in counts.items() if n > MAX_CYCLES[k]}
    assert not over, "import cycles in engine/ (break them: a Protocol, or move the shared part down):\n" + "\n".join(
        reports
    )
