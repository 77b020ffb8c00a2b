"""What operators see: tools_report (shown with tier/p50/p99/badge/health, hidden with reasons), badges and the
leaderboard, and ``ava-engine mcp calibrate`` end to end against the project's dice server over stdio."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.budget.report import leaderboard, tools_report
from engine.budget.tiers import badge_for
from engine.tools.base import ToolCategory
from tests.engine.budget.helpers import FakeClock, engine_for, settings_for, tool

ROOT = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize(
    ("p50", "badge"),
    [(None, "Unmeasured"), (0.2, "Lightning"), (49.9, "Lightning"), (50, "Fast"), (199.9, "Fast"),
     (200, "Standard"), (999, "Standard"), (1000, "Slow"), (5000, "Slow")],
)
def test_badges(p50: float | None, badge: str) -> None:
    assert badge_for(p50) == badge


async def test_tools_report_for_a_context_and_tier(tmp_path: Path) -> None:
    tools = [tool("quick", mx=100), tool("deep_one", mx=3000), tool("lookup", est=10, mx=300)]
    engine = engine_for(settings_for(tmp_path, ["quick", "deep_one", "lookup", "missing"]), *tools,
                        clock=FakeClock())
    for _ in range(5):
        await engine.executor.execute(None, "lookup", {}, allowed=frozenset({"lookup"}))
    report = tools_report(engine, "c", "fast")
    assert (report["context"], report["tier"], report["provider"]) == ("c", "fast", None)
    assert [t["name"] for t in report["tools"]] == ["lookup", "quick"]  # measured p99 ~0 ms beats declared 100
    rows = {r["name"]: r for r in report["shown"]}
    assert rows["lookup"]["badge"] == "Lightning" and rows["lookup"]["samples"] == 5
    assert rows["lookup"]["p50_ms"] is not None and rows["lookup"]["health"] == "healthy"
    assert rows["quick"]["badge"] == "Unmeasured" and rows["quick"]["compatibility"] == "FAST compatible"
    assert {h["name"]: h["reason"] for h in report["hidden"]} == {
        "missing": "not available (no such tool registered)",
        "deep_one": "needs DEEP (declared max 3000 ms)",
    }
    assert report["tiers"] == {"fast": 500, "standard": 1500, "deep": 4000}
    rendered = tools_report(engine, "c", "fast", provider_type="openai_chat")["tools"]
    assert [t["function"]["name"] for t in rendered] == ["lookup", "quick"]
    with pytest.raises(ValueError, match="unknown context 'nope'"):
        tools_report(engine, "nope", None)
    with pytest.raises(ValueError, match="unknown tier"):
        tools_report(engine, "c", "warp")


async def test_leaderboard_ranks_per_category(tmp_path: Path) -> None:
    tools = [tool("a_slow", mx=3000), tool("b_fast", mx=10), tool("c_calls", mx=100, category=ToolCategory.TELEPHONY)]
    engine = engine_for(settings_for(tmp_path, []), *tools, clock=FakeClock())
    for _ in range(5):
        await engine.executor.execute(None, "a_slow", {}, allowed=frozenset({"a_slow"}))
    board = leaderboard(engine)
    info = [(r["rank"], r["name"], r["badge"]) for r in board["information"]]
    assert info == [(1, "a_slow", "Lightning"), (2, "b_fast", "Unmeasured")]  # measured beats unmeasured
    assert [r["name"] for r in board["telephony"]] == ["c_calls", "hangup_call"]
    assert board["telephony"][1]["compatibility"] == "every tier (call control)"


def _run_cli(argv: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    import engine.cli as cli

    if "engine.cli.budget_commands" not in cli.COMMAND_MODULES:
        monkeypatch.setattr(cli, "COMMAND_MODULES", (*cli.COMMAND_MODULES, "engine.cli.budget_commands"))
    return cli.main(argv)


@pytest.mark.timeout(60)
def test_cli_calibrate_against_the_dice_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg: dict[str, Any] = {
        "engine": {"http": {"enabled": False}},
        "mcp": {"servers": {"dice": {"transport": "stdio", "cwd": str(ROOT),
                                     "command": [sys.executable, "-m", "engine.servers.dice", "--seed", "1"]}}},
    }
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump(cfg))
    code = _run_cli(["--config", str(path), "--json", "mcp", "calibrate", "dice", "--probes", "3"], monkeypatch)
    out = capsys.readouterr().out
    assert code == 0, out
    report = json.loads(out)
    rows = {r["name"]: r for r in report["tools"]}
    assert rows["roll"]["result"] == "skipped" and rows["roll"]["reason"] == "not idempotent: never probed"
    listed = rows["list_tables"]
    assert listed["result"] == "calibrated" and listed["outcomes"] == {"success": 3}
    assert report["environment"] == "local"
    code = _run_cli(["--config", str(path), "--json", "mcp", "calibrate", "nosuch"], monkeypatch)
    assert code == 2 and "unknown MCP server 'nosuch'" in capsys.readouterr().out
