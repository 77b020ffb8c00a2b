"""The engine's public API: what the console may import, and the snapshot queries it uses instead of internals."""

from __future__ import annotations

import ast
import dataclasses
import logging
from pathlib import Path

import pytest

import engine
from engine.app import Engine
from engine.calls.manager import CallError
from engine.sessions.snapshot import CallInfo, ToolState
from tests.engine.core.helpers import echo_tool, engine_with, settings_with

CONSOLE = Path(__file__).parents[3] / "console"


def _engine_imports(path: Path) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        out.extend((node.lineno, n) for n in names if n == "engine" or n.startswith("engine."))
    return out


def test_the_console_imports_only_the_engines_public_api() -> None:
    bad = [
        f"{p.relative_to(CONSOLE.parent)}:{line}: {name}"
        for p in sorted(CONSOLE.rglob("*.py"))
        for line, name in _engine_imports(p)
        if name not in ("engine", "engine.events", "engine.config") and not name.startswith("engine.config.")
    ]
    assert bad == []


def test_the_console_reads_no_call_session_internals() -> None:
    text = "\n".join(p.read_text(encoding="utf-8") for p in CONSOLE.rglob("*.py"))
    internals = ("tool_overrides", "live_calls(", "tool_view(", "engine.budget", "Softphone(engine", "phone.events()")
    for internal in internals:
        assert internal not in text, internal


def test_every_public_name_resolves() -> None:
    for name in engine.__all__:
        assert getattr(engine, name) is not None, name
    with pytest.raises(AttributeError):
        _ = engine.no_such_name


async def test_call_info_and_tool_states_are_snapshots(tmp_path: Path) -> None:
    eng: Engine = engine_with(settings_with(tmp_path, [], ["echo", "hangup_call"]), echo_tool())
    call = await eng.start_call("c", caller_name="Robin")
    info = eng.call_info(call.call_id)
    assert isinstance(info, CallInfo) and info.caller_name == "Robin" and info.context == "c"
    assert [i.call_id for i in eng.calls_info()] == [call.call_id]
    with pytest.raises(dataclasses.FrozenInstanceError):
        info.tier = "deep"  # type: ignore[misc]
    states = {t.name: t for t in eng.tool_states(call.call_id)}
    assert states["echo"] == ToolState("echo", "builtin", shown=True, enabled=True)
    eng.set_tool_enabled(call.call_id, "echo", False)
    echo = {t.name: t for t in eng.tool_states(call.call_id)}["echo"]
    assert (echo.shown, echo.enabled) == (False, False) and echo.reason
    assert info.tier == call.tier  # the earlier snapshot did not follow the call
    await eng.end_call(call.call_id)
    assert eng.call_info(call.call_id) is None and eng.calls_info() == []
    with pytest.raises(CallError, match="no live call"):
        eng.tool_states(call.call_id)


async def test_leaderboard_is_an_engine_query(tmp_path: Path) -> None:
    eng = engine_with(settings_with(tmp_path, [], ["echo"]), echo_tool())
    rows = [r for rows in eng.leaderboard().values() for r in rows]
    assert "echo" in {r["name"] for r in rows} and all("rank" in r for r in rows)


async def test_the_softphone_belongs_to_the_engine(tmp_path: Path) -> None:
    eng = engine_with(settings_with(tmp_path, [], []))
    phone = eng.softphone()
    assert eng.softphone() is phone and phone.state == "idle" and not phone.active


def test_configure_logging_is_an_engine_command(tmp_path: Path) -> None:
    settings = settings_with(tmp_path, [], [], engine={"logging": {"level": "info", "file": "logs/e.log"}})
    eng = Engine(settings, config_path=tmp_path / "config.yaml")
    root = logging.getLogger()
    before, level = list(root.handlers), root.level
    try:
        eng.configure_logging()
        logging.getLogger("test.public_api").info("through the engine's logging")
    finally:
        for h in [h for h in root.handlers if h not in before]:
            root.removeHandler(h)
            h.close()
        root.setLevel(level)
    assert "through the engine's logging" in (tmp_path / "logs" / "e.log").read_text()
