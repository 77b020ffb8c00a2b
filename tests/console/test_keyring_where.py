"""Where secrets and OAuth tokens go, said honestly (issue 34 item 10), by pilot.

Before: the import dialog, the add-from-registry dialog, the import's diff title and its inputs form said "the OS
keyring" (or "the keyring") whatever backend keyring had picked, and the sign-in dialog said nothing of where the
tokens go, so a plaintext file keyring (keyrings.alt's, here the real one) passed for a safe place. And removing a
remote server left its OAuth tokens and client registration in the keyring with nothing saying so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keyring
import pytest
from textual.widgets import DataTable, Static

from console.app import AvaConsole
from tests.console.helpers import paste
from tests.fixtures.memory_keyring import MemoryKeyring

REMOTE = (
    "    remote:\n      enabled: false\n      transport: http\n      url: http://127.0.0.1:9/mcp\n"
    "      auth: {oauth: {scopes: [tools]}}\n"
)
OAUTH_SERVICE = "ava-console-oauth"  # engine.mcp.token_store.SERVICE


def _with_servers(config_path: Path, servers: str) -> Path:
    config_path.write_text(config_path.read_text().replace("  servers: {}\n", "  servers:\n" + servers))
    return config_path


@pytest.fixture
def plaintext_keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """keyrings.alt's real PlaintextKeyring, writing under ``tmp_path``; yields the data directory."""
    from keyrings.alt.file import PlaintextKeyring

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.delenv("DISPLAY", raising=False)  # never a real browser from a test
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    old = keyring.get_keyring()
    keyring.set_keyring(PlaintextKeyring())
    try:
        yield tmp_path / "data"
    finally:
        keyring.set_keyring(old)


def _text(app: AvaConsole) -> str:
    """Every line of text on the top screen, as drawn."""
    return "\n".join(str(w.render()) for w in app.screen.query(Static))


async def _names_it_unencrypted(pilot: Any, app: AvaConsole, data_dir: Path, wait: Any) -> str:
    await wait(pilot, lambda: "UNENCRYPTED" in _text(app), within=10)
    text = _text(app)
    assert str(data_dir) in text.replace("\n", ""), text  # the file that holds them
    assert "OS keyring" not in text, text
    return text


async def test_the_dialogs_name_a_plaintext_keyring_unencrypted(
    config_path: Path, plaintext_keyring: Path, wait: Any
) -> None:
    _with_servers(config_path, REMOTE)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        for key, dialog in (("i", "ImportScreen"), ("A", "AddSourceScreen"), ("s", "SignInScreen")):
            await pilot.press(key)
            await wait(pilot, lambda dialog=dialog: type(app.screen).__name__ == dialog)
            text = await _names_it_unencrypted(pilot, app, plaintext_keyring, wait)
            if dialog == "SignInScreen":
                assert "tokens" in text, text
            await pilot.press("escape")
            await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")


VSCODE = {
    "inputs": [{"type": "promptString", "id": "tok", "description": "the token", "password": True}],
    "servers": {
        "gh": {
            "type": "stdio",
            "command": "python3",
            "args": ["-m", "srv"],
            "env": {"TOKEN": "${input:tok}", "API_KEY": "sk-proj-0a1b2c3d4e5f6a7b8c9d"},
        }
    },
}


async def test_the_import_names_a_plaintext_keyring_unencrypted(
    config_path: Path, tmp_path: Path, plaintext_keyring: Path, wait: Any
) -> None:
    """The inputs form's title and the diff's "(to the keyring: …)" title."""
    src = tmp_path / "mcp.json"
    src.write_text(json.dumps(VSCODE))
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await pilot.press("i")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "import-path")
        await paste(pilot, str(src))
        await pilot.press("enter")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "import-input-0")
        await _names_it_unencrypted(pilot, app, plaintext_keyring, wait)
        await paste(pilot, "wk-0123456789abcdef")
        await pilot.press("enter")
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        title: str = app.screen.title_text  # type: ignore[attr-defined]
        assert "UNENCRYPTED" in title and str(plaintext_keyring) in title and "GH_API_KEY" in title, title


async def _store_sign_in(sid: str, url: str) -> None:
    """What a sign-in leaves in the keyring: tokens and a client registration, for that server id and URL."""
    from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

    from engine.mcp.token_store import KeyringTokenStorage

    storage = KeyringTokenStorage(sid, url)
    await storage.set_tokens(OAuthToken(access_token="at-1", refresh_token="rt-1", expires_in=3600))
    client = OAuthClientInformationFull(client_id="c-1", redirect_uris=["http://127.0.0.1:1/callback"])  # type: ignore[list-item]
    await storage.set_client_info(client)


async def _remove(pilot: Any, app: AvaConsole, sid: str, wait: Any) -> str:
    """Servers screen → d on ``sid`` → yes → save the diff; the question asked next."""
    await wait(pilot, lambda: app.engine_running)
    await pilot.press("f3")
    await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
    table = app.screen.query_one("#servers", DataTable)
    await wait(pilot, lambda: table.row_count == 2)
    table.move_cursor(row=table.get_row_index(sid))
    await pilot.press("d")
    await wait(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen")
    await pilot.press("y")
    await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
    await pilot.press("y")
    await wait(pilot, lambda: type(app.screen).__name__ == "ConfirmScreen", within=20)
    return str(app.screen.question)  # type: ignore[attr-defined]


OTHER = "    other:\n      enabled: false\n      url: http://127.0.0.1:9/other\n      transport: http\n"


async def test_removing_a_server_offers_to_delete_its_oauth_sign_in(
    config_path: Path, memory_keyring: MemoryKeyring, wait: Any
) -> None:
    from engine.config import set_secret

    client_secret = "      auth: {oauth: {client_id: c-1, client_secret: '${keyring:REMOTE_CLIENT_SECRET}'}}\n"
    _with_servers(config_path, REMOTE.replace("      auth: {oauth: {scopes: [tools]}}\n", client_secret) + OTHER)
    set_secret("REMOTE_CLIENT_SECRET", "cs-1")
    await _store_sign_in("remote", "http://127.0.0.1:9/mcp")
    await _store_sign_in("other", "http://127.0.0.1:9/other")
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        question = await _remove(pilot, app, "remote", wait)
        assert "REMOTE_CLIENT_SECRET" in question and "OAuth" in question and "remote" in question, question
        await pilot.press("y")
        await wait(pilot, lambda: (OAUTH_SERVICE, "remote") not in memory_keyring.store)
        await wait(pilot, lambda: ("ava-console", "REMOTE_CLIENT_SECRET") not in memory_keyring.store)
    assert (OAUTH_SERVICE, "other") in memory_keyring.store  # another server's sign-in is never touched


async def test_the_oauth_sign_in_is_kept_when_the_operator_says_no(
    config_path: Path, memory_keyring: MemoryKeyring, wait: Any
) -> None:
    """Only a sign-in is offered (no named secrets), and n keeps it: another config may use the same server id."""
    from tests.console.helpers import record_notifications

    _with_servers(config_path, REMOTE + OTHER)
    await _store_sign_in("remote", "http://127.0.0.1:9/mcp")
    app = AvaConsole(config_path)
    notes = record_notifications(app)
    async with app.run_test(size=(120, 40)) as pilot:
        question = await _remove(pilot, app, "remote", wait)
        assert "OAuth" in question, question
        await pilot.press("n")
        await wait(pilot, lambda: any("kept" in n and "remote" in n for n in notes))
    assert (OAUTH_SERVICE, "remote") in memory_keyring.store
