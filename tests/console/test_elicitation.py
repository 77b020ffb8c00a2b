"""Pilot tests of a tool's question to the operator (MCP elicitation) in the console: a call's tool on a real
fixture server asks how many guests, on a 2025-era and a 2026-era server; the dialog comes up over the Calls screen
with the server, tool, message and a form from the requested schema; a wrong number is refused with the reason and
nothing is sent; Ctrl+S sends the answer and the tool gets it; Ctrl+D declines; the invocation row says whom it
waits for meanwhile."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from console.app import AvaConsole
from console.screens.elicitation import ElicitationScreen
from console.screens.invocations import running_text
from console.state import Invocation
from tests.console.conftest import servers_up
from tests.console.helpers import record_notifications, type_text

ROOT = Path(__file__).resolve().parents[2]
SERVER = ROOT / "tests" / "fixtures" / "mcp_servers" / "elicit_server.py"


@pytest.fixture
def tables_config(config_path: Path) -> Path:
    cfg = yaml.safe_load(config_path.read_text())
    cfg["mcp"]["servers"] = {
        era: {"command": [sys.executable, str(SERVER)], "mode": mode, "connect_timeout_ms": 60_000}
        for era, mode in (("old", "legacy"), ("new", "auto"))
    }
    cfg["contexts"]["demo"]["elicitation"] = {"ask": "operator", "timeout_ms": 60_000}
    config_path.write_text(yaml.safe_dump(cfg))
    script_path = config_path.parent / "script.yaml"
    script = yaml.safe_load(script_path.read_text())
    for era in ("old", "new"):
        script["intents"].insert(
            0,
            {
                "name": f"book_{era}",
                "patterns": [f"book {era}"],
                "tools": [{"name": f"mcp_{era}_book_table"}],
                "reply": "{result}",
            },
        )
    script_path.write_text(yaml.safe_dump(script))
    return config_path


async def _ask(pilot, app: AvaConsole, wait, era: str) -> ElicitationScreen:
    await wait(pilot, lambda: app.engine_running, 60)
    await wait(pilot, lambda: servers_up(app, "old", "new"), 60)
    await pilot.press("ctrl+n")
    await wait(pilot, lambda: app.focused is not None and app.focused.id == "calls", 30)
    await pilot.press("s")
    await wait(pilot, lambda: app.focused is not None and app.focused.id == "talk", 30)
    await type_text(pilot, f"book {era}")
    await pilot.press("enter")
    await wait(pilot, lambda: isinstance(app.screen, ElicitationScreen), 30)
    assert isinstance(app.screen, ElicitationScreen)
    return app.screen


def _invocation(app: AvaConsole, era: str) -> Invocation:
    return next(i for i in reversed(app.state.invocations) if i.exposed_name == f"mcp_{era}_book_table")


@pytest.mark.parametrize("era", ["old", "new"])
async def test_the_operator_answers_in_the_dialog(tables_config: Path, wait, era: str) -> None:
    app = AvaConsole(tables_config)
    async with app.run_test(size=(120, 40)) as pilot:
        record_notifications(app)
        dialog = await _ask(pilot, app, wait, era)
        text = " ".join(str(w.render()) for w in dialog.query("Static, Label"))
        assert f"{era} · book_table asks on call-" in text
        assert "How many guests should I book the table for?" in text
        assert "s left, then it is declined" in text
        assert [s.name for s in dialog.specs] == ["guests"]
        await wait(pilot, lambda: _invocation(app, era).waiting == "operator", 10)
        assert "waiting for operator" in str(running_text(_invocation(app, era)))
        await pilot.click("#el-guests")
        await pilot.press(*"40")
        await pilot.press("ctrl+s")
        await pilot.pause(0.2)
        assert app.screen is dialog  # refused by the engine's check: nothing sent, the dialog stays
        assert "'Guests' must be at most 12" in str(dialog.query_one("#el-error").render())
        await pilot.press("backspace", "backspace", "4")
        await pilot.press("ctrl+s")
        await wait(pilot, lambda: not isinstance(app.screen, ElicitationScreen), 10)
        await wait(pilot, lambda: _invocation(app, era).status == "success", 30)
        assert _invocation(app, era).message == 'accept {"guests":4}'
        assert _invocation(app, era).waiting is None


async def test_ctrl_d_declines_and_a_question_nobody_answers_closes_its_dialog(tables_config: Path, wait) -> None:
    app = AvaConsole(tables_config)
    async with app.run_test(size=(120, 40)) as pilot:
        notes = record_notifications(app)
        await _ask(pilot, app, wait, "new")
        await pilot.press("ctrl+d")
        await wait(pilot, lambda: _invocation(app, "new").status == "success", 30)
        assert _invocation(app, "new").message == "decline"
        assert app.engine is not None
        app.engine.settings.contexts["demo"].elicitation.timeout_ms = 500
        await pilot.press("escape")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "calls", 30)
        await pilot.press("s")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "talk", 30)
        await type_text(pilot, "book old")
        await pilot.press("enter")
        await wait(pilot, lambda: _invocation(app, "old").status == "success", 30)
        assert _invocation(app, "old").message == "decline"
        await wait(pilot, lambda: not isinstance(app.screen, ElicitationScreen), 10)
        assert any("question decline by timeout" in n for n in notes)
