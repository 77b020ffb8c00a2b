"""The HTTP API and the command dispatcher use what they are handed (issue 35 item 1): no back doors.

``engine/http`` used to find the engine's task group with ``getattr(backend, "tasks", None)`` and, on every
/health request and app build, walk ``backend.components`` asking each for ``health`` and ``install_routes``: a part
reaching through the engine to whatever it holds, invisible to mypy and to the wiring's reader. Now the composition
root hands the HTTP server an ``HttpBackend`` record (the task group's health, the MCP host's status, the named
health sections and the route installers, each given at composition time) and the dispatcher a ``ControlOps``
record of the operations it calls.

The scan reads the source of the door packages (an AST walk, so a comment or a docstring does not count): no
``getattr``/``hasattr`` on a backend, an engine, a host or a component, and no mention of a ``components`` list.
A second check reads the composition root: nothing in it is handed ``engine`` itself but the parts it builds.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: The doors: the HTTP API (and the MCP endpoint beside it) and the operator's desk with the command dispatcher.
DOORS = ("engine/http", "engine/operator", "engine/mcp_endpoint")
#: What a ``getattr`` must not be aimed at: the whole engine, or what stands for it (``self.engine``, ``backend``…).
BACK_DOOR_NAMES = {"backend", "engine", "host", "component", "target"}
#: The classes the composition root builds for the doors; none may be handed ``engine``.
DOOR_CLASSES = {"HttpServer", "HttpCapacity", "HttpApprovals", "HttpRemote", "CommandDispatcher", "ControlComponent"}


def _names_in(node: ast.expr) -> set[str]:
    """Every identifier an expression is made of (``self._backend.x`` → self, _backend, x), leading ``_`` dropped."""
    found: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            found.add(n.id.lstrip("_"))
        elif isinstance(n, ast.Attribute):
            found.add(n.attr.lstrip("_"))
    return found


def back_doors(source: str) -> list[str]:
    """``line: what`` for each back door in one module's source."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("getattr", "hasattr"):
            aimed = _names_in(node.args[0]) if node.args else set()
            if aimed & BACK_DOOR_NAMES:
                found.append(f"{node.lineno}: {node.func.id}({ast.unparse(node.args[0])}, ...)")
        elif isinstance(node, ast.Attribute) and node.attr == "components":
            found.append(f"{node.lineno}: {ast.unparse(node)} (a run-time search of the component list)")
        elif isinstance(node, ast.Name) and node.id == "components":
            found.append(f"{node.lineno}: {node.id} (a run-time search of the component list)")
    return found


def test_the_doors_use_no_back_door() -> None:
    bad = [
        f"{p.relative_to(ROOT)}:{hit}"
        for door in DOORS
        for p in sorted((ROOT / door).rglob("*.py"))
        for hit in back_doors(p.read_text(encoding="utf-8"))
    ]
    assert bad == [], "a door reaches through what it was handed:\n" + "\n".join(bad)


def test_the_scan_finds_each_kind_of_back_door() -> None:
    source = (
        "def f(backend, self):\n"
        "    getattr(backend, 'tasks', None)\n"
        "    hasattr(self.engine, 'x')\n"
        "    for c in backend.components:\n"
        "        pass\n"
        "    getattr(parsed, 'call_id', None)\n"
    )
    assert [hit.split(":")[0] for hit in back_doors(source)] == ["2", "3", "4"]


def handed_the_engine(source: str) -> list[str]:
    """``line: Class(engine …)`` for each door class built with ``engine`` (or ``self``) among its arguments."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in DOOR_CLASSES:
            given = [*node.args, *(k.value for k in node.keywords)]
            if any(isinstance(a, ast.Name) and a.id in ("engine", "self") for a in given):
                found.append(f"{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def test_the_composition_root_hands_the_doors_parts_not_the_engine() -> None:
    bad = [
        f"{name}:{hit}"
        for name in ("engine/app.py", "engine/components.py")
        for hit in handed_the_engine((ROOT / name).read_text(encoding="utf-8"))
    ]
    assert bad == []


def component_list_searches(source: str) -> list[str]:
    """``line: what`` for each use of an engine's ``components`` list (the launchers and the console)."""
    return [
        f"{n.lineno}: {ast.unparse(n)}"
        for n in ast.walk(ast.parse(source))
        if (isinstance(n, ast.Attribute) and n.attr == "components")
        or (isinstance(n, ast.Constant) and n.value == "components")
    ]


def test_the_cli_and_the_console_ask_the_engine_instead_of_searching_its_parts() -> None:
    """Where the HTTP API listens is ``Engine.api_url()``; ``ava-engine serve`` and the console's header used to
    find the HTTP server by walking ``engine.components`` with ``getattr``."""
    bad = [
        f"{p.relative_to(ROOT)}:{hit}"
        for where in ("engine/cli", "console")
        for p in sorted((ROOT / where).rglob("*.py"))
        for hit in component_list_searches(p.read_text(encoding="utf-8"))
    ]
    assert bad == [], "a run-time search of the engine's component list:\n" + "\n".join(bad)
    assert component_list_searches("getattr(engine, 'components', ())\nengine.components\n") != []
