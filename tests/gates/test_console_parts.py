"""Console screens built of small parts (issue 34 item 13): no mixin assemblies, no import circles in console/.

A screen assembled from mixins shares one ``self`` (and so all of the app) between every part: any part can read or
change any other's state, and the parts can only be tested as the whole screen. A part is a widget or an object
given the narrow piece of the console's model it needs. Import circles are what a service-locator app makes (every
screen types the app, the app imports every screen); the circle is counted over module-level imports, those under
``if TYPE_CHECKING`` included (a circle only the type checker sees is still a circle).

Both lists below are ratchets: they may only shrink (an entry no longer needed fails too, so it is removed).
``python tests/gates/test_console_parts.py`` prints the measures: the cycles and the app reads per class.
"""

from __future__ import annotations

import ast
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONSOLE = ROOT / "console"
# classes still assembled from more than one of the project's own classes: remove an entry once it is not
MIXINS_ALLOWED: set[str] = set()
# modules still in an import circle: remove an entry once it is in none
CYCLE_ALLOWED: set[str] = set()


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def console_modules() -> dict[str, ast.Module]:
    return {module_name(p): ast.parse(p.read_text(encoding="utf-8")) for p in sorted(CONSOLE.rglob("*.py"))}


def top_level_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The module's own imports and those under ``if TYPE_CHECKING`` (not those inside functions)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.Import | ast.ImportFrom):
                found.append(node)
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(node.orelse)

    visit(tree.body)
    return found


def imported_names(node: ast.Import | ast.ImportFrom) -> dict[str, str]:
    """Local name -> what it names (``module`` or ``module.attribute``)."""
    if isinstance(node, ast.Import):
        return {(a.asname or a.name).split(".")[0]: a.name for a in node.names}
    return {a.asname or a.name: f"{node.module}.{a.name}" for a in node.names if node.level == 0}


def project_bases(modules: dict[str, ast.Module]) -> dict[str, list[str]]:
    """Every class under console/ with the bases it takes from console/ itself (Textual, rich, stdlib not counted)."""
    out: dict[str, list[str]] = {}
    for mod, tree in modules.items():
        names: dict[str, str] = {}
        for node in top_level_imports(tree):
            names.update(imported_names(node))
        local = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            if any(ast.unparse(b) == "Protocol" for b in cls.bases):  # joins interfaces, no behaviour: not a mixin
                continue
            ours = []
            for base in cls.bases:
                root = base.value if isinstance(base, ast.Subscript) else base
                while isinstance(root, ast.Attribute):
                    root = root.value
                name = root.id if isinstance(root, ast.Name) else ""
                if name in local or names.get(name, "").startswith("console."):
                    ours.append(ast.unparse(base))
            out[f"{mod}.{cls.name}"] = ours
    return out


def import_graph(modules: dict[str, ast.Module]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for mod, tree in modules.items():
        targets: set[str] = set()
        for node in top_level_imports(tree):
            for what in imported_names(node).values():
                # ``from console.screens import calls`` names a module; ``from console.x import Y`` names x
                targets.update(m for m in (what, what.rpartition(".")[0]) if m in modules and m != mod)
            if isinstance(node, ast.ImportFrom) and node.module in modules and node.module != mod:
                targets.add(node.module)
        graph[mod] = targets
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in graph:
        if start in index:
            continue
        work: list[tuple[str, list[str]]] = [(start, sorted(graph[start]))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, todo = work[-1]
            if todo:
                nxt = todo.pop()
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, sorted(graph[nxt])))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def app_reads() -> Counter[str]:
    """``self.app.X`` / ``self.capp.X`` reads per class, of the app's own attributes (not Textual's App API)."""
    from textual.app import App

    textual_api = set(dir(App))
    counts: Counter[str] = Counter()
    for mod, tree in console_modules().items():
        for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
            for n in ast.walk(cls):
                owner = n.value if isinstance(n, ast.Attribute) else None
                if (
                    isinstance(owner, ast.Attribute)
                    and isinstance(owner.value, ast.Name)
                    and owner.value.id == "self"
                    and owner.attr in ("app", "capp")
                    and isinstance(n, ast.Attribute)
                    and n.attr not in textual_api
                ):
                    counts[f"{mod}.{cls.name}"] += 1
    return counts


def test_no_mixin_assemblies() -> None:
    assembled = {cls: bases for cls, bases in project_bases(console_modules()).items() if len(bases) > 1}
    unexpected = {cls: bases for cls, bases in assembled.items() if cls not in MIXINS_ALLOWED}
    assert not unexpected, f"classes assembled from mixins (give each part its own widget or object): {unexpected}"
    gone = sorted(MIXINS_ALLOWED - set(assembled))
    assert not gone, f"no longer assembled from mixins, remove from MIXINS_ALLOWED: {gone}"


def test_no_import_circles() -> None:
    found = cycles(import_graph(console_modules()))
    members = {m for c in found for m in c}
    unexpected = [c for c in found if set(c) - CYCLE_ALLOWED]
    assert not unexpected, f"import circles in console/ (pass the narrow piece needed, not the app): {unexpected}"
    gone = sorted(CYCLE_ALLOWED - members)
    assert not gone, f"in no import circle any more, remove from CYCLE_ALLOWED: {gone}"


if __name__ == "__main__":
    reads = app_reads()
    print(f"app attribute reads (self.app./self.capp., Textual's own API not counted): {sum(reads.values())}")
    for cls, n in sorted(reads.items()):
        print(f"  {n:4} {cls}")
    for c in cycles(import_graph(console_modules())):
        print(f"import circle of {len(c)}: {' '.join(c)}")
    for cls, bases in project_bases(console_modules()).items():
        if len(bases) > 1:
            print(f"mixin assembly: {cls}({', '.join(bases)})")
    sys.exit(0)
