"""The engine stays headless: importing every engine module never loads textual, and no engine module imports
rich itself (the mcp SDK's server pulls rich in for its own logging; that is allowed)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def engine_modules() -> list[str]:
    mods = []
    for p in sorted((ROOT / "engine").rglob("*.py")):
        rel = p.relative_to(ROOT).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        if parts[-1] == "__main__":
            continue
        mods.append(".".join(parts))
    return mods


def test_importing_every_engine_module_never_loads_textual() -> None:
    code = (
        "import importlib, sys\n"
        f"mods = {engine_modules()!r}\n"
        "for m in mods:\n"
        "    importlib.import_module(m)\n"
        "bad = sorted(k for k in sys.modules if k == 'textual' or k.startswith('textual.'))\n"
        "print(len(mods), bad)\n"
        "sys.exit(1 if bad else 0)\n"
    )
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr


def textual_or_rich_imports() -> list[str]:
    """``file:line: module`` for every import of textual or rich in engine/ (read as source, not imported)."""
    offenders = []
    for p in sorted((ROOT / "engine").rglob("*.py")):
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module]
            else:
                continue
            for n in names:
                if n.split(".")[0] in ("textual", "rich"):
                    offenders.append(f"{p.relative_to(ROOT)}:{node.lineno}: {n}")
    return offenders


def test_no_engine_module_imports_textual_or_rich() -> None:
    # In a process of its own: on CPython 3.11.7, Python code run by a garbage collection inside ast.parse (asyncio
    # logging "Task exception was never retrieved" for a task an earlier test left) fails the parse with "AST
    # constructor recursion depth mismatch".
    code = "import json, tests.engine.core.test_boundaries as t; print(json.dumps(t.textual_or_rich_imports()))"
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == []
