"""Saving config edits: show the diff, write atomically (comments kept), then hot-reload the running engine.

Every save in the console goes through ``save_document``: nothing is written until the operator has seen the
diff and said yes; the file write runs in a thread worker and the reload in the app's loop (group "config").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from console.screens.modals import DiffScreen

if TYPE_CHECKING:
    from console.app import AvaConsole
    from engine.config import ConfigDocument, Settings


def save_document(
    app: AvaConsole,
    doc: ConfigDocument,
    title: str,
    on_saved: Callable[[Settings], None] | None = None,
) -> None:
    """Diff → confirm → atomic save (thread) → engine.reload (loop) → ``on_saved(settings)``."""
    diff = doc.diff()
    if not diff:
        app.notify("no changes to save", title="config")
        return

    def answered(yes: bool | None) -> None:
        if yes:
            app.run_worker(lambda: _write(app, doc, on_saved), thread=True, group="config", name="config-save")
        else:
            app.notify("not saved: the file is unchanged", title="config")

    app.push_screen(DiffScreen(title, diff), answered)


def _write(app: AvaConsole, doc: ConfigDocument, on_saved: Callable[[Settings], None] | None) -> None:
    from engine.config import ConfigError

    try:
        settings = doc.save()
    except ConfigError as e:
        app.call_from_thread(app.notify, f"not saved:\n{e.render()}", title="config", severity="error", timeout=15)
        return
    except OSError as e:
        app.call_from_thread(app.notify, f"not saved: {e}", title="config", severity="error")
        return
    assert settings is not None
    app.call_from_thread(app.after_config_saved, settings, on_saved)
