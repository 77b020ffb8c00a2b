"""Pilot tests of the tool log (search, status filter, masked detail), budget, secrets (set, delete, and the
plain message without a keyring backend) and config (validate, reload) screens, by keyboard alone."""

from __future__ import annotations

from pathlib import Path

import keyring
import keyring.backends.fail

from console.app import AvaConsole
from engine.events import ToolCompleted, ToolRequested


def _edit(path: Path, old: str, new: str) -> None:
    path.write_text(path.read_text().replace(old, new))


async def test_tool_log_filter_and_masked_detail(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        bus = app.engine.bus  # type: ignore[union-attr]
        bus.publish(
            ToolRequested(
                call_id="c1",
                tool_call_id="t1",
                exposed_name="mcp_mail_send",
                server="mail",
                tool="send",
                arguments={"to": "a@b.c", "api_key": "sk-very-secret-1234"},
            )
        )
        bus.publish(
            ToolCompleted(
                call_id="c1",
                tool_call_id="t1",
                exposed_name="mcp_mail_send",
                server="mail",
                tool="send",
                status="error",
                latency_ms=12.0,
                message="refused",
            )
        )
        bus.publish(
            ToolRequested(call_id="c2", tool_call_id="t1", exposed_name="mcp_dice_roll", server="dice", tool="roll")
        )
        bus.publish(
            ToolCompleted(
                call_id="c2",
                tool_call_id="t1",
                exposed_name="mcp_dice_roll",
                server="dice",
                tool="roll",
                status="success",
                latency_ms=3.0,
                message="7",
                cache_hit=True,
            )
        )
        await pilot.press("f2")
        await wait(pilot, lambda: type(app.screen).__name__ == "ToolLogScreen")
        table = app.screen.query_one("#invocations")
        await wait(pilot, lambda: table.row_count == 2)  # type: ignore[attr-defined]
        await pilot.press("f")  # status: success
        await wait(pilot, lambda: table.row_count == 1)  # type: ignore[attr-defined]
        await pilot.press("f")  # status: error
        await wait(pilot, lambda: table.row_count == 1)  # type: ignore[attr-defined]
        await pilot.press("f", "f", "f", "f", "f")  # timeout, rejected, cancelled, running, back to all
        await pilot.press("slash", *"dice", "enter")
        await wait(pilot, lambda: table.row_count == 1)  # type: ignore[attr-defined]
        await pilot.press("escape", "slash", *["backspace"] * 4, *"mail", "enter")
        await wait(pilot, lambda: table.row_count == 1)  # type: ignore[attr-defined]
        await pilot.press("enter")
        await wait(pilot, lambda: type(app.screen).__name__ == "InvocationDetail")
        args = str(app.screen.query_one("#detail-args").render())
        assert "a@b.c" in args and "sk-very-secret-1234" not in args and "••••••" in args
        assert "refused" in str(app.screen.query_one("#detail-result").render())
        await pilot.press("escape")
        await wait(pilot, lambda: type(app.screen).__name__ == "ToolLogScreen")


async def test_budget_screen(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("f4")
        await wait(pilot, lambda: type(app.screen).__name__ == "BudgetScreen")
        tiers = app.screen.query_one("#tiers")
        await wait(pilot, lambda: tiers.row_count == 4)  # type: ignore[attr-defined]
        assert "1500 ms" in str(tiers.get_row_at(1))  # type: ignore[attr-defined]
        await pilot.press("f19")
        await wait(pilot, lambda: "DEEP" in str(app.screen.query_one("#default-tier").render()))
        tools = app.screen.query_one("#tier-tools")
        assert "hangup_call" in str(tools.get_row_at(0))  # type: ignore[attr-defined]
        await pilot.press("c")
        board = app.screen.query_one("#leaderboard")
        await wait(pilot, lambda: board.row_count >= 1)  # type: ignore[attr-defined]


async def test_secrets_set_and_delete(config_path: Path, memory_keyring, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("f9")
        await wait(pilot, lambda: type(app.screen).__name__ == "SecretsScreen")
        await pilot.press("a")
        await wait(pilot, lambda: type(app.screen).__name__ == "SecretEntry")
        await pilot.press(*"OPENAI_KEY", "enter", *"sk-abcdefghijklmnop", "enter")
        await wait(pilot, lambda: ("ava-console", "OPENAI_KEY") in memory_keyring.store)
        table = app.screen.query_one("#secrets")
        await wait(pilot, lambda: "OPENAI_KEY" in [k.value for k in table.rows])  # type: ignore[attr-defined]
        assert "sk-abc" not in str(table.get_row("OPENAI_KEY"))  # type: ignore[attr-defined]
        await pilot.press("d")
        await wait(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("y")
        await wait(pilot, lambda: ("ava-console", "OPENAI_KEY") not in memory_keyring.store)
        await wait(pilot, lambda: table.row_count == 0)  # type: ignore[attr-defined]


async def test_secrets_without_keyring_backend(config_path: Path, wait) -> None:
    old = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())
    try:
        app = AvaConsole(config_path)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait(pilot, lambda: app.engine_running)
            await pilot.press("f9")
            status = app.screen.query_one("#keyring-status")
            await wait(pilot, lambda: "No OS keyring" in str(status.render()))
            assert "keyrings.cryptfile" in str(status.render())
    finally:
        keyring.set_keyring(old)


async def test_config_validate_and_reload(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("f10")
        status = app.screen.query_one("#config-status")
        await wait(pilot, lambda: "valid" in str(status.render()))
        assert str(config_path) in str(app.screen.query_one("#config-path").render())
        _edit(config_path, "fast: 500", "fast: 9000")
        await pilot.press("v")
        await wait(pilot, lambda: "invalid" in str(status.render()))
        assert "tiers must grow" in str(status.render())
        _edit(config_path, "fast: 9000", "fast: 400")
        await pilot.press("r")
        await wait(pilot, lambda: app.engine.settings.budget.tiers.fast == 400)  # type: ignore[union-attr]
