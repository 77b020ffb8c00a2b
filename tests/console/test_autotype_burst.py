"""A password manager's auto-type (issue 34 item 10): the name, Tab and the secret arrive within a few
milliseconds, all queued before the console handles the first. The secret must never land in the visible Name
field: the secrets form's name and value, and the server form's env row (name, then its masked value).

Before: Tab moved the focus only once its key event had gone down to the focused input and bubbled back up to the
app's bindings; the keys queued behind it had already been handed to the Name field, so the secret was typed there
in plain sight and the value field stayed empty.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Any

from textual import events
from textual.widgets import Input

from console.app import AvaConsole
from tests.console.test_server_form_secrets import DICE, _config, _open_form
from tests.fixtures.memory_keyring import MemoryKeyring

NAME = "WEATHER_KEY"
SECRET = "sk-live-9f8e7d6c5b4a"


def burst(app: AvaConsole, *keys: str) -> None:
    """Queue every key at once, as a terminal delivers an auto-typed burst: no key is handled before the last one
    arrives (``pilot.press`` waits for the app to go idle after each key, which hides the race)."""
    driver = app._driver
    assert driver is not None
    for key in keys:
        if len(key) == 1:
            name = key if key.isalnum() else unicodedata.name(key).lower().replace(" ", "_").replace("-", "_")
            event = events.Key(name, key)  # what the terminal driver makes of a typed character
        else:
            event = events.Key(key, None)
        event.set_sender(app)
        driver.send_message(event)


async def test_the_secrets_form_keeps_the_secret_out_of_the_name(
    config_path: Path, memory_keyring: MemoryKeyring, wait: Any
) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("f9")
        await wait(pilot, lambda: type(app.screen).__name__ == "SecretsScreen")
        await pilot.press("a")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "secret-name")
        name, value = app.screen.query_one("#secret-name", Input), app.screen.query_one("#secret-value", Input)
        burst(app, *NAME, "tab", *SECRET)
        await wait(pilot, lambda: len(name.value + value.value) == len(NAME + SECRET))  # every key handled
        assert name.value == NAME
        assert value.value == SECRET
        burst(app, "enter")  # a password manager's auto-type ends with Enter: stored under the name typed
        await wait(pilot, lambda: ("ava-console", NAME) in memory_keyring.store)
        assert memory_keyring.store[("ava-console", NAME)] == SECRET
        assert not any(SECRET in name for _service, name in memory_keyring.store)


async def test_the_server_forms_env_row_keeps_the_secret_out_of_the_name(
    config_path: Path, memory_keyring: MemoryKeyring, wait: Any
) -> None:
    _config(config_path, DICE)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await _open_form(pilot, app, wait, "e")
        app.screen.query_one("#add-env").press()  # type: ignore[attr-defined]
        await wait(pilot, lambda: app.focused is not None and "kv-key" in app.focused.classes)
        burst(app, *NAME, "tab", *SECRET)
        key = app.screen.query_one(".kv-key", Input)
        value = app.screen.query_one(".kv-value", Input)
        await wait(pilot, lambda: len(key.value + value.value) == len(NAME + SECRET))  # every key handled
        assert key.value == NAME
        assert value.value == SECRET
