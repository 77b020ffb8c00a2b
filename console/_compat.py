"""Textual's and textual-serve's private API the console relies on, in one place (issue 35 item 5).

Why it exists: a private name can change in any Textual release; here each is looked up through the engine's
``private()`` (a ``CompatError`` naming the package, its version and what was relied on), pinned by the ranges in
pyproject.toml, and held by tests/console/test_console_compat.py. The engine's own are in engine/_compat.

Read or called:

- ``App._handle_exception(error)``: Textual's one funnel for an error (crash_guard hands handler errors to it).
- ``App._exception``: the error a headless app (a Pilot) re-raises when its test ends (crash_guard sets it).
- ``App._keymap``: the user's keymap as applied (the palette lists the remapped keys).
- ``DOMNode._bindings`` / ``DOMNode._merged_bindings``: a node's bindings, and a screen class's before it is mounted.
- ``textual.widgets._footer.FooterKey`` (not re-exported) and ``Footer._bindings_ready``: the footer's keys.
- ``RichLog._size_known``: whether a log has its width yet (before that RichLog defers writes).
- ``DataTable._require_update_dimensions`` / ``DataTable._clear_caches()``: a table re-measured after a width change.

Overridden (``OVERRIDES``; the subclass calls the original through ``super()``): ``MessagePump._dispatch_message``
(errors contained), ``DataTable._on_idle``, ``Widget._on_mouse_scroll_up`` / ``_on_scroll_up`` / ``_on_scroll_to``
(the log stops following); textual-serve's ``Server._make_app`` (the access guard goes first), checked by
``check_serve_overrides`` when console/web_serve.py is imported (textual-serve loads only for ``--serve``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import textual.widgets._footer as textual_footer
from textual.app import App
from textual.binding import BindingsMap
from textual.dom import DOMNode
from textual.message_pump import MessagePump
from textual.widget import Widget
from textual.widgets import DataTable, Footer

from engine import dependency_private as private

__all__ = [
    "OVERRIDES",
    "FooterKey",
    "app_keymap",
    "check_serve_overrides",
    "footer_bindings_ready",
    "handle_exception",
    "log_size_known",
    "merged_bindings",
    "node_bindings",
    "pending_exception_unset",
    "remeasure_table",
    "set_pending_exception",
]

if TYPE_CHECKING:
    from textual.widgets import RichLog  # its module loads rich.pretty: not before the first frame
    from textual.widgets._footer import FooterKey
else:
    FooterKey = private(textual_footer, "FooterKey", "textual")

#: (class, private method) → its parameters, for each one a console class overrides.
OVERRIDES: dict[tuple[type[Any], str], tuple[str, ...]] = {
    (MessagePump, "_dispatch_message"): ("self", "message"),
    (DataTable, "_on_idle"): ("self", "_"),
    (Widget, "_on_mouse_scroll_up"): ("self", "event"),
    (Widget, "_on_scroll_up"): ("self", "event"),
    (Widget, "_on_scroll_to"): ("self", "message"),
}
for (_cls, _name), _params in OVERRIDES.items():
    private(_cls, _name, "textual", _params)
private(App, "_handle_exception", "textual", ("self", "error"))
private(DataTable, "_clear_caches", "textual", ("self",))
private(Footer, "_bindings_ready", "textual")
private(DOMNode, "_merged_bindings", "textual")


def handle_exception(app: App[Any], error: Exception) -> None:
    """Hand ``error`` to the app as Textual does an unhandled one (the console's app contains it)."""
    app._handle_exception(error)


def pending_exception_unset(app: App[Any]) -> bool:
    """True when the app holds no error to re-raise (a Pilot re-raises a held one when its test ends)."""
    return private(app, "_exception", "textual") is None


def set_pending_exception(app: App[Any], error: Exception) -> None:
    """Hold ``error`` for a Pilot to re-raise when its test ends."""
    private(app, "_exception", "textual")
    app._exception = error


def app_keymap(app: App[Any]) -> dict[str, str]:
    """The user's keymap as the app applied it (binding id → keys)."""
    keymap: dict[str, str] = private(app, "_keymap", "textual")
    return keymap


def node_bindings(node: DOMNode) -> BindingsMap:
    """A mounted node's own bindings."""
    bindings: BindingsMap = private(node, "_bindings", "textual")
    return bindings


def merged_bindings(cls: type[DOMNode]) -> BindingsMap:
    """A node class's bindings merged with its bases' (an empty map before Textual merged them)."""
    merged: BindingsMap | None = cls._merged_bindings
    return merged or BindingsMap()


def footer_bindings_ready(footer: Footer) -> bool:
    """Whether the footer has had its screen's bindings yet."""
    return bool(footer._bindings_ready)


def log_size_known(log: RichLog) -> bool:
    """Whether a log knows its width (before that RichLog defers writes and replays them on its first resize)."""
    return bool(private(log, "_size_known", "textual"))


def remeasure_table(table: DataTable[Any]) -> None:
    """Make a table measure its columns again (a column's width or heading changed under it)."""
    private(table, "_require_update_dimensions", "textual")
    table._require_update_dimensions = True
    table._clear_caches()


def check_serve_overrides() -> None:
    """textual-serve's ``Server._make_app`` is still there to override (imported only when serving the console)."""
    from textual_serve.server import Server

    private(Server, "_make_app", "textual-serve", ("self",))
