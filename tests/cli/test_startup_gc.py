"""The garbage collector stays out of ``ava-engine``'s import of the engine, and is back on for the command itself.

Importing ``engine.app`` (the MCP SDK, pydantic models) makes ~110,000 long-lived objects and almost no garbage, yet
the collector walked them ~275 times meanwhile (two full passes): ~15 % of the import's CPU, paid by every command
that runs an engine, and the test suite runs hundreds. The installed entry point runs here with a ``gc.callbacks``
hook that counts the passes made while ``engine.app`` was still being imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT = Path(sys.executable).parent / "ava-engine"

#: Runs the installed script as ``__main__`` after installing the hook; prints what it saw at exit.
WATCH = """
import atexit, gc, json, runpy, sys

seen = {"during_import": 0, "after_import": 0}

def count(phase, info):
    app = sys.modules.get("engine.app")
    if phase == "start" and app is not None:
        seen["during_import" if not hasattr(app, "Engine") else "after_import"] += 1

gc.callbacks.append(count)
atexit.register(lambda: print("GC " + json.dumps({**seen, "enabled": gc.isenabled()}), file=sys.stderr))
sys.argv = [sys.argv[1], *sys.argv[2:]]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_no_collection_while_the_engine_is_imported_and_collections_after() -> None:
    assert ENTRY_POINT.exists(), f"{ENTRY_POINT} is missing: install the package (make test does) first"
    argv = [sys.executable, "-c", WATCH, str(ENTRY_POINT), "--config", "config/default.yaml", "tools", "--json"]
    p = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["tools"], p.stdout  # the command ran on an engine
    (line,) = [ln for ln in p.stderr.splitlines() if ln.startswith("GC ")]
    seen = json.loads(line.removeprefix("GC "))
    assert seen["during_import"] == 0, seen
    # the collector is on again for the command: the engine's start and stop made passes after the import
    assert seen["enabled"] is True and seen["after_import"] > 0, seen
