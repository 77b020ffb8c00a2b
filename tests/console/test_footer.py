"""The console's footer keeps its key widgets while the keys it shows stay the same, and rebuilds when they change
(Textual's rebuilt them on every focus change: most of the time to the first frame)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets._footer import FooterKey

from console.app import AvaConsole
from console.widgets.footer import KeyFooter


async def test_footer_rebuilds_only_when_its_keys_change(config_path: Path, wait) -> None:
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running or app.engine_error is not None, within=30)
        assert app.engine_error is None, app.engine_error
        footer = app.screen.query_one(KeyFooter)
        await wait(pilot, lambda: len(footer.query(FooterKey)) > 0)
        before = list(footer.query(FooterKey))
        app.screen.refresh_bindings()  # "may have changed": the same keys
        await pilot.press("tab")  # focus moves on: the same keys again
        await pilot.pause(0.2)
        assert list(footer.query(FooterKey)) == before
        app.set_keymap({"call_new": "ctrl+b"})  # a key the footer shows is remapped
        await wait(pilot, lambda: any(k.key == "ctrl+b" for k in footer.query(FooterKey)))
        assert not any(k.key == "ctrl+n" for k in footer.query(FooterKey))
