"""Issue 16 A14: fixing an invalid config and pressing r on the Config screen starts the engine (never stuck at
"reloading…"); the no-keyring message says a restart is needed after installing a backend; Ctrl+Q with live calls
asks first, and both answers do what they say."""

from __future__ import annotations

from pathlib import Path

import keyring
import keyring.backends.fail

from console.app import AvaConsole
from console.quit_guard import QuitConfirm


def _read(path: Path) -> str:
    return path.read_text()


def _write(path: Path, text: str) -> None:
    path.write_text(text)


#: A loaded test box starts the engine slowly.
START_S = 90


async def test_fixing_an_invalid_config_and_r_starts_the_engine(config_path: Path, wait) -> None:
    good = _read(config_path)
    _write(config_path, good.replace("fast: 500", "fast: 9000"))  # tiers must grow: invalid
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_error is not None, START_S)
        await pilot.press("f10")
        status = app.screen.query_one("#config-status")
        await wait(pilot, lambda: "invalid" in str(status.render()))
        _write(config_path, good)
        await pilot.press("r")
        await wait(pilot, lambda: app.engine_running, START_S)
        assert app.engine_error is None and app.engine is not None
        assert app.engine.settings.budget.tiers.fast == 500
        await wait(pilot, lambda: "reloading" not in str(status.render()) and "valid" in str(status.render()))
        assert "invalid" not in str(status.render())


async def test_keyring_message_says_a_restart_is_needed(config_path: Path, wait) -> None:
    old = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())
    try:
        app = AvaConsole(config_path)
        async with app.run_test(size=(120, 40)) as pilot:
            await wait(pilot, lambda: app.engine_running, START_S)
            await pilot.press("f9")
            status = app.screen.query_one("#keyring-status")
            await wait(pilot, lambda: "No OS keyring" in str(status.render()))
            assert "after restarting ava-console" in str(status.render())
    finally:
        keyring.set_keyring(old)


async def test_ctrl_q_with_a_live_call_asks_no_keeps_yes_quits(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, START_S)
        await pilot.press("ctrl+n")
        await wait(pilot, lambda: bool(app.state.calls))
        await pilot.press("escape", "ctrl+q")
        await wait(pilot, lambda: isinstance(app.screen, QuitConfirm))
        assert isinstance(app.screen, QuitConfirm) and "1 live call" in app.screen.question
        await pilot.press("n")
        await wait(pilot, lambda: not isinstance(app.screen, QuitConfirm))
        assert app.engine_running and app.engine is not None and len(app.engine.calls_info()) == 1
        await pilot.press("ctrl+q")
        await wait(pilot, lambda: isinstance(app.screen, QuitConfirm))
        await pilot.press("y")
        await wait(pilot, lambda: not app.engine_running and app.engine is not None and not app.engine.started)
    assert app.return_code == 0


async def test_ctrl_q_without_calls_quits_at_once(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, START_S)
        await pilot.press("ctrl+q")
        await wait(pilot, lambda: not app.engine_running)
        assert not any(isinstance(s, QuitConfirm) for s in app.screen_stack)
