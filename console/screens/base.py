"""The base of every console screen: typed access to the app, incremental updates, a rebuild on resume if stale."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, cast

from textual.binding import Binding, BindingType
from textual.screen import Screen

from console.crash_guard import ContainErrors
from console.state import Changes

if TYPE_CHECKING:
    from console.console_port import Console


class ConsoleScreen(ContainErrors, Screen[Any]):
    """A screen fed by the app: ``apply_changes`` per event batch, ``refresh_all`` when shown again. An error in
    one of its handlers is shown and contained (``ContainErrors``): the screen goes on answering keys."""

    #: Every screen's ``?``: the keys of this screen and the app-wide ones (screens add theirs to these).
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("question_mark", "key_help", "Keys", id="key_help", show=False),
    ]

    #: Actions (by name) that need this console's own engine, and what to call them: in a console attached to
    #: engines elsewhere (``--attach``) the key says "<what>: not available when attached to …" instead of acting.
    LOCAL_ONLY: ClassVar[dict[str, str]] = {}

    #: The app's ``feed.sync_token()`` when this screen last caught up (None: never): a resumed screen rebuilds only
    #: when the token moved meanwhile (rebuilding the Calls screen's 50 rows and its log took ~150 ms under load).
    synced: tuple[int, int, str | None] | None = None

    #: Where this screen's single-letter keys act (its main table): when a dialog closes over one of its text boxes,
    #: the focus goes back there, so the next key acts instead of being typed (None: the focus stays where it was).
    KEYS_HOME: ClassVar[str | None] = None

    @property
    def capp(self) -> Console:
        """The console this screen is shown in, as much of it as screens use (``console.console_port``)."""
        return cast("Console", self.app)

    async def after_first_frame(self) -> None:
        """Mount what was left out of the first frame (the app calls this once the frame is drawn; default: none)."""

    def apply_changes(self, changes: Changes) -> None:
        """Update only what ``changes`` names (default: nothing on this screen depends on events)."""

    def refresh_all(self) -> None:
        """Rebuild everything from the app's state (on first show and when the screen is resumed)."""

    def on_screen_suspend(self) -> None:
        self.synced = self.capp.feed.sync_token()

    def on_screen_resume(self) -> None:
        if self.synced != self.capp.feed.sync_token():
            self.refresh_all()
        self.update_keybar()
        typing = self.focused is not None and self.focused.check_consume_key("a", "a")  # a text box has the focus
        if self.KEYS_HOME is not None and typing:
            for home in self.query(self.KEYS_HOME):
                home.focus()

    def open_dialog(self, screen: Screen[Any], callback: Callable[[Any], None] | None = None) -> None:
        """Show a dialog over this screen; its answer goes to ``callback`` (the parts' ``Dialogs``)."""
        self.app.push_screen(screen, callback)

    def bound_keys(self) -> dict[str, str]:
        """Binding id -> its key as bound now (``console.keymap`` may remap them)."""
        return {b.id: b.key for _n, b, _e, _t in self.active_bindings.values() if b.id}

    def action_key_help(self) -> None:
        from console.screens.key_help import KeyHelpScreen

        self.app.push_screen(KeyHelpScreen(self))

    def update_keybar(self) -> None:
        """Redraw the key bar (selection, default tier or keymap changed)."""
        from console.widgets.keybar import KeyBar

        for bar in self.query(KeyBar):
            bindings = [b for _n, b, _e, _t in self.active_bindings.values()]
            engine = self.capp.engine
            default = engine.default_tier if engine is not None else self.capp.state.default_tier
            row = self.capp.state.calls.get(self.capp.selected_call or "")
            overridden = row is not None and row.tier_reason == "operator override"
            bar.show(bindings, self.capp.selected_call, default, row.tier if row else None, overridden)
