"""Secrets screen (issue 16 A4): adding never replaces a stored secret without asking; replacing the selected
secret's value and renaming it are their own keys.

Before: ``a`` with a row selected opened the entry with that row's name filled in, and Enter twice silently
overwrote the stored value; there was no rename.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import keyring
from textual.widgets import DataTable, Static

from console.app import AvaConsole
from engine.config import set_secret
from tests.console.helpers import type_text
from tests.fixtures.memory_keyring import MemoryKeyring

KEY = ("ava-console", "OPENAI_KEY")


async def _secrets_screen(pilot: Any, app: AvaConsole, wait: Any) -> Any:
    await wait(pilot, lambda: app.engine_running)
    await pilot.press("f9")
    await wait(pilot, lambda: type(app.screen).__name__ == "SecretsScreen")
    table = app.screen.query_one("#secrets", DataTable)
    await wait(pilot, lambda: "OPENAI_KEY" in [k.value for k in table.rows])
    return table


async def test_add_asks_before_replacing(config_path: Path, memory_keyring: MemoryKeyring, wait: Any) -> None:
    set_secret("OPENAI_KEY", "original-value")
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _secrets_screen(pilot, app, wait)
        await pilot.press("a")  # the row OPENAI_KEY is selected
        await wait(pilot, lambda: type(app.screen).__name__ == "SecretEntry")
        assert app.screen.query_one("#secret-name").value == ""  # type: ignore[attr-defined]
        await type_text(pilot, "OPENAI_KEY")
        await pilot.press("enter")
        await type_text(pilot, "new-value")
        await pilot.press("enter")
        await wait(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("n")
        await wait(pilot, lambda: type(app.screen).__name__ == "SecretsScreen")
        await pilot.pause(0.2)
        assert memory_keyring.store[KEY] == "original-value"
        await pilot.press("a", *"OPENAI_KEY", "enter", *"new-value", "enter")
        await wait(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("y")
        await wait(pilot, lambda: memory_keyring.store[KEY] == "new-value")
        await pilot.press("a", *"OTHER", "enter", *"v2", "enter")  # a new name: no question
        await wait(pilot, lambda: memory_keyring.store.get(("ava-console", "OTHER")) == "v2")


async def test_replace_and_rename_are_their_own_keys(
    config_path: Path, memory_keyring: MemoryKeyring, wait: Any
) -> None:
    set_secret("OPENAI_KEY", "original-value")
    set_secret("TAKEN", "taken-value")
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        table = await _secrets_screen(pilot, app, wait)
        table.move_cursor(row=table.get_row_index("OPENAI_KEY"))
        await pilot.press("e")  # replace the selected secret's value: that is what e says, so no question
        await wait(pilot, lambda: type(app.screen).__name__ == "SecretEntry")
        await type_text(pilot, "replaced")
        await pilot.press("enter")
        await wait(pilot, lambda: memory_keyring.store[KEY] == "replaced")
        await pilot.press("r")
        await wait(pilot, lambda: type(app.screen).__name__ == "NameEntry")
        await pilot.press(*["backspace"] * 10)
        await type_text(pilot, "TAKEN")
        await pilot.press("enter")
        await wait(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
        await pilot.press("n")
        await wait(pilot, lambda: type(app.screen).__name__ == "SecretsScreen")
        await pilot.pause(0.2)
        assert memory_keyring.store[("ava-console", "TAKEN")] == "taken-value" and KEY in memory_keyring.store
        table.move_cursor(row=table.get_row_index("OPENAI_KEY"))
        await pilot.press("r")
        await wait(pilot, lambda: type(app.screen).__name__ == "NameEntry")
        await pilot.press(*["backspace"] * 10)
        await type_text(pilot, "LLM_KEY")
        await pilot.press("enter")
        await wait(pilot, lambda: memory_keyring.store.get(("ava-console", "LLM_KEY")) == "replaced")
        assert KEY not in memory_keyring.store
        await wait(pilot, lambda: "LLM_KEY" in [k.value for k in table.rows] and "OPENAI_KEY" not in table.rows)


async def test_an_unencrypted_keyring_is_named_never_ready(
    config_path: Path, tmp_path: Path, monkeypatch: Any, wait: Any
) -> None:
    from keyrings.alt.file import PlaintextKeyring

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))  # where the plaintext file goes
    old = keyring.get_keyring()
    keyring.set_keyring(PlaintextKeyring())
    try:
        set_secret("OPENAI_KEY", "original-value")
        app = AvaConsole(config_path)
        async with app.run_test(size=(120, 40)) as pilot:
            await _secrets_screen(pilot, app, wait)
            status = app.screen.query_one("#keyring-status", Static)
            await wait(pilot, lambda: "Unencrypted keyring" in str(status.render()))
            assert "keyring ready" not in str(status.render())
    finally:
        keyring.set_keyring(old)
