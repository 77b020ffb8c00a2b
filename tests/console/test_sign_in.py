"""Pilot test of the Servers screen's Sign in: a remote server behind OAuth (the SDK's own authorization server and a
protected MCPServer) waits in ``needs sign-in``; ``s`` shows the URL in a dialog, the test plays the browser, and the
server comes ``up`` with its tools; no token ever reaches the screen."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest
from textual.widgets import DataTable

from console.app import AvaConsole
from console.screens.sign_in import SignInScreen
from tests.engine.mcp.oauth_helpers import OAuthPeer, follow, stored_secrets
from tests.fixtures.file_keyring import FileKeyring


@pytest.fixture
def ring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    path = tmp_path / "keyring.json"
    monkeypatch.setenv("AVA_TEST_KEYRING_FILE", str(path))
    monkeypatch.delenv("DISPLAY", raising=False)  # never a real browser from a test
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    old = keyring.get_keyring()
    keyring.set_keyring(FileKeyring())
    yield path
    keyring.set_keyring(old)


@pytest.fixture
def peer() -> Iterator[OAuthPeer]:
    p = OAuthPeer()
    yield p
    p.kill()


def _add_server(config_path: Path, entry: str) -> None:
    config_path.write_text(config_path.read_text().replace("  servers: {}\n", "  servers:\n" + entry))


def _state(app: AvaConsole, sid: str) -> str:
    assert app.engine is not None
    return str(next(s for s in app.engine.server_status()["servers"] if s["id"] == sid)["state"])


async def test_sign_in_from_the_servers_screen(config_path: Path, ring: Path, peer: OAuthPeer, wait) -> None:
    entry = (
        f"    prot:\n      transport: http\n      url: {peer.url}\n      connect_timeout_ms: 8000\n"
        "      auth: {oauth: {scopes: [tools]}}\n"
    )
    _add_server(config_path, entry)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running, within=30)
        await wait(pilot, lambda: _state(app, "prot") == "needs sign-in")
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await pilot.pause(0.3)
        assert "needs sign-in" in app.screen.query_one("#servers", DataTable).get_row("prot")[1].plain
        await pilot.press("s")
        await wait(pilot, lambda: isinstance(app.screen, SignInScreen))
        dialog = app.screen
        assert isinstance(dialog, SignInScreen)
        await wait(pilot, lambda: dialog.url is not None, within=15)
        assert dialog.url is not None and dialog.url.startswith(peer.as_url + "/authorize?")
        shown = str(dialog.query_one("#signin-url").render())
        assert peer.as_url in shown
        status, _ = await asyncio.to_thread(follow, dialog.url)  # the browser
        assert status == 200
        await wait(pilot, lambda: dialog.signed_in, within=20)
        assert _state(app, "prot") == "up"
        assert "mcp_prot_whoami" in app.engine.registry.names()  # type: ignore[union-attr]
        screen_text = app.export_screenshot()
        await pilot.press("escape")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await pilot.pause(0.3)
        assert "up" in app.screen.query_one("#servers", DataTable).get_row("prot")[1].plain
        screen_text += app.export_screenshot()
    tokens = stored_secrets(ring)
    assert tokens and all(t not in screen_text for t in tokens)


async def test_sign_in_refused_for_a_server_without_oauth(config_path: Path, wait) -> None:
    from tests.console.helpers import record_notifications

    _add_server(
        config_path, "    plain:\n      transport: http\n      url: http://127.0.0.1:9/mcp\n      start: lazy\n"
    )
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        notes = record_notifications(app)
        await wait(pilot, lambda: app.engine_running, within=30)
        await pilot.press("f3")
        await wait(pilot, lambda: type(app.screen).__name__ == "ServersScreen")
        await pilot.pause(0.3)
        await pilot.press("s")
        await wait(pilot, lambda: any("does not sign in" in n for n in notes))
        assert not isinstance(app.screen, SignInScreen)
