"""The footer of every console screen: Textual's ``Footer``, rebuilt only when the keys it shows change.

Textual's footer rebuilds all its key widgets whenever the screen's bindings *may* have changed (every focus
change, every ``refresh_bindings``); on the Calls screen, with a dozen keys, that happened five times before the
first frame and was most of the time to it. This footer remembers what it last showed (key, label, action, enabled,
tooltip of every shown binding) and skips the rebuild when that is unchanged. Its keys start in the footer's
style instead of restyling themselves twice on mount.
"""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer

from console._compat import FooterKey, footer_bindings_ready


class KeyFooter(Footer):
    """A ``Footer`` that recomposes only when the bindings it shows differ from the ones it shows now."""

    _shown: tuple[Any, ...] | None = None

    def _signature(self) -> tuple[Any, ...]:
        palette = self.app.COMMAND_PALETTE_BINDING
        return tuple(
            (b.key, b.description, b.action, enabled, tooltip, b.tooltip, b.group)
            for key, (_node, b, enabled, tooltip) in self.screen.active_bindings.items()
            if b.show or key == palette
        )

    def compose(self) -> ComposeResult:
        self._shown = self._signature() if footer_bindings_ready(self) else None
        for widget in super().compose():
            if isinstance(widget, FooterKey) and not widget.has_class("-command-palette"):
                # A key starts compact (its own default) and is then bound to the footer's ``compact``: two style
                # updates per key on mount. Starting it in the footer's style leaves the binding nothing to change.
                widget.set_reactive(FooterKey.compact, self.compact)
                widget.set_class(self.compact, "-compact", update=False)
            yield widget

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if footer_bindings_ready(self) and self._shown is not None and screen is self.screen:
            if self._signature() == self._shown:
                return
        super().bindings_changed(screen)
