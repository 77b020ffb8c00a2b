"""console/_compat.py: every Textual private name the console relies on is there and does what it is used for. A
Textual release that changes one fails here, naming it, before a screen misbehaves."""

from __future__ import annotations

import types
from typing import ClassVar

import pytest
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import DataTable, Footer, RichLog

from console import _compat
from engine._compat._check import CompatError, private


class _Keyed(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("x", "noop", "X", id="compat_x")]


class _Seen(Message):
    pass


class _Recording(Widget):
    """Overrides the private dispatch as ContainErrors and the app do."""

    seen: ClassVar[list[str]] = []

    async def _dispatch_message(self, message: Message) -> None:
        _Recording.seen.append(type(message).__name__)
        await super()._dispatch_message(message)


class _CompatApp(App[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("y", "noop", "Y", id="compat_y")]

    def compose(self) -> ComposeResult:
        yield RichLog()
        yield DataTable()
        yield _Recording()
        yield Footer()


def test_every_overridden_private_method_takes_what_the_console_passes() -> None:
    for (cls, name), params in _compat.OVERRIDES.items():
        private(cls, name, "textual", params)
    _compat.check_serve_overrides()


def test_a_private_name_textual_dropped_fails_naming_textual() -> None:
    with pytest.raises(CompatError, match=r"^textual \d+\.\d+\.\d+ has no app\._keymap: the project relies on it"):
        _compat.app_keymap(types.SimpleNamespace(__name__="app"))  # type: ignore[arg-type]


def test_merged_bindings_of_an_unmounted_screen_class() -> None:
    merged = _compat.merged_bindings(_Keyed).key_to_bindings
    assert "x" in merged and "tab" in merged  # its own and its bases' (Screen's focus keys)


async def test_textual_privates_in_a_running_app() -> None:
    app = _CompatApp()
    async with app.run_test(size=(60, 12)) as pilot:
        log, table, recording, footer = (
            app.query_one(RichLog),
            app.query_one(DataTable),
            app.query_one(_Recording),
            app.query_one(Footer),
        )
        await pilot.pause()
        assert _compat.node_bindings(app).key_to_bindings["y"][0].id == "compat_y"
        app.set_keymap({"compat_y": "z"})
        assert _compat.app_keymap(app) == {"compat_y": "z"}
        assert _compat.log_size_known(log)
        assert _compat.footer_bindings_ready(footer)
        assert isinstance(footer.query(_compat.FooterKey).first(), _compat.FooterKey)
        table.add_column("a")
        _compat.remeasure_table(table)
        assert table._require_update_dimensions
        recording.post_message(_Seen())
        await pilot.pause()
        assert "_Seen" in _Recording.seen
        assert _compat.pending_exception_unset(app)


async def test_a_handed_error_ends_the_plain_app_and_a_held_one_is_reraised() -> None:
    app = _CompatApp()
    with pytest.raises(ValueError, match="handed"):
        async with app.run_test(size=(60, 12)) as pilot:
            _compat.handle_exception(app, ValueError("handed"))
            await pilot.pause()
    held = _CompatApp()
    with pytest.raises(KeyError, match="held"):
        async with held.run_test(size=(60, 12)):
            _compat.set_pending_exception(held, KeyError("held"))
            assert not _compat.pending_exception_unset(held)


def test_unmounted_log_has_no_size() -> None:
    assert not _compat.log_size_known(RichLog())
