"""Snapshots of the dialogs that say where secrets and OAuth tokens go, with a plaintext keyring, at 80×24, 120×40
and 200×60 (issue 34 item 10): the import and add-from-registry hints and the sign-in dialog name it UNENCRYPTED, and
removing a signed-in server asks whether to delete its sign-in. One console run per size takes all four
(``snapshot_runs``); fixed clock, a keyring in memory that calls itself plaintext so the file it names is the same on
every machine."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import keyring
import pytest
from textual.widgets import DataTable, Input

from console.app import AvaConsole
from console.format import FixedClock
from console.widgets.keyring_where import KeyringWhere
from tests.console.snapshot_runs import compare_svg, screens_of_one_run
from tests.fixtures.memory_keyring import MemoryKeyring

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "console" / "data"
SIZES = [(80, 24), (120, 40), (200, 60)]
STEPS = ["import", "add_source", "sign_in", "remove"]  # remove last: it edits the config
REMOTE = (
    "    remote:\n      enabled: false\n      transport: http\n      url: http://127.0.0.1:9/mcp\n"
    "      auth: {oauth: {scopes: [tools]}}\n"
)


class PlaintextKeyring(MemoryKeyring):
    """Named like keyrings.alt's plain-file keyring (so the engine calls it unencrypted); keeps nothing on disk."""

    file_path = "/home/operator/.local/share/python_keyring/keyring_pass.cfg"


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The console tests' config with a remote server behind OAuth (off: nothing to reach), in a keyring that keeps
    its sign-in; a copy, since the last step removes the server."""
    monkeypatch.chdir(tmp_path)  # the header shows the config's path as given: the same on every machine
    monkeypatch.delenv("DISPLAY", raising=False)  # never a real browser from a test
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    text = (DATA / "console.yaml").read_text().replace("  servers: {}\n", "  servers:\n" + REMOTE)
    path = tmp_path / "console.yaml"
    path.write_text(text.replace("script: script.yaml", f"script: {DATA / 'script.yaml'}"))
    old = keyring.get_keyring()
    ring = PlaintextKeyring()
    ring.set_password("ava-console-oauth", "remote", '{"url": "http://127.0.0.1:9/mcp"}')
    keyring.set_keyring(ring)
    try:
        yield Path(path.name)
    finally:
        keyring.set_keyring(old)


async def _settle(pilot: Any, predicate: Any, within: float = 30.0) -> None:
    import asyncio

    end = asyncio.get_running_loop().time() + within
    while not predicate():
        assert asyncio.get_running_loop().time() < end, "snapshot set-up timed out"
        await pilot.pause(0.05)
    await pilot.pause(0.3)


def _screen(app: AvaConsole) -> str:
    return type(app.screen).__name__


async def _run_before(pilot: Any) -> None:
    app: AvaConsole = pilot.app
    await _settle(pilot, lambda: app.engine_running, within=60)
    await pilot.press("f3")
    await _settle(pilot, lambda: _screen(app) == "ServersScreen")


async def _show(pilot: Any, step: str) -> None:
    app: AvaConsole = pilot.app
    while _screen(app) != "ServersScreen":
        await pilot.press("escape")
        await pilot.pause(0.1)
    if step == "remove":
        table = app.screen.query_one("#servers", DataTable)
        await _settle(pilot, lambda: table.row_count == 1)
        await pilot.press("d")
        await _settle(pilot, lambda: _screen(app) == "ConfirmScreen")
        await pilot.press("y")
        await _settle(pilot, lambda: _screen(app) == "DiffScreen")
        await pilot.press("y")
        await _settle(pilot, lambda: _screen(app) == "ConfirmScreen" and "OAuth" in app.screen.question)  # type: ignore[attr-defined]
    else:
        key, dialog = {"import": ("i", "ImportScreen"), "add_source": ("A", "AddSourceScreen")}.get(
            step, ("s", "SignInScreen")
        )
        await pilot.press(key)
        await _settle(pilot, lambda: _screen(app) == dialog)
        await _settle(pilot, lambda: all(w.where is not None for w in app.screen.query(KeyringWhere)))
        # the longer line re-lays the dialog out; a loaded run once took its picture with the new text in the old
        # height (the hint's last lines cut): lay the screen out again before the picture
        app.screen.refresh(layout=True)
        await pilot.pause(0.2)
        if step == "sign_in":  # the sign-in fails at once (nothing listens): the same words every run
            await _settle(pilot, lambda: "sign-in failed" in str(app.screen.query_one("#signin-status").render()))
    for field in app.screen.query(Input):  # a blinking cursor is on or off depending on when the frame is taken
        field.cursor_blink = False
    await pilot.pause(0.5)
    app.clear_notifications()
    await pilot.pause(0.2)


@pytest.mark.parametrize(
    ("step", "size"), [pytest.param(k, s, id=f"{k}-size{i}") for i, s in enumerate(SIZES) for k in STEPS]
)
def test_keyring_where_dialogs(
    snapshot: Any, request: pytest.FixtureRequest, config: Path, size: Any, step: str
) -> None:
    app = lambda: AvaConsole(config, clock=FixedClock(), tick=False)  # noqa: E731
    shots = screens_of_one_run("keyring_where", app, size, _run_before, STEPS, _show)
    assert compare_svg(snapshot, request, shots[step])
