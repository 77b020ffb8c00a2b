"""Saving config edits: show the diff, write atomically (comments kept), then hot-reload the running engine.

Every save in the console goes through ``save_document``: nothing is written until the operator has seen the
diff and said yes; the file write runs in a thread worker and the reload in the app's loop (group "config").
Secrets never show in a diff: values the caller names in ``hide`` (credentials the operator chose to keep in the
YAML) are masked by the engine's ``Redactor`` in every form it knows (inside JSON text too), and ``before_write``
(e.g. putting moved credentials into the keyring) runs only after the yes, in the same thread as the write, so a
refusal or a keyring failure writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from console.screens.modals import DiffScreen
from engine import Redactor

if TYPE_CHECKING:
    from console.console_port import Console
    from engine.config import ConfigDocument, Settings


def save_document(
    app: Console,
    doc: ConfigDocument,
    title: str,
    on_saved: Callable[[Settings], None] | None = None,
    *,
    hide: Iterable[str] = (),
    before_write: Callable[[], object] | None = None,
) -> None:
    """Diff → confirm → ``before_write`` + atomic save (thread) → engine.reload (loop) → ``on_saved(settings)``."""
    diff = doc.diff()
    if not diff:
        app.notify("no changes to save", title="config")
        return

    def answered(yes: bool | None) -> None:
        if yes:
            app.run_worker(
                lambda: _write(app, doc, on_saved, before_write), thread=True, group="config", name="config-save"
            )
        else:
            app.notify("not saved: the file is unchanged", title="config")

    app.push_screen(DiffScreen(title, Redactor(hide)(diff)), answered)


def _write(
    app: Console,
    doc: ConfigDocument,
    on_saved: Callable[[Settings], None] | None,
    before_write: Callable[[], object] | None = None,
) -> None:
    from engine.config import ConfigError, SecretsError

    try:
        if before_write is not None:
            before_write()
        settings = doc.save()
    except ConfigError as e:
        app.call_from_thread(app.notify, f"not saved:\n{e.render()}", title="config", severity="error", timeout=15)
        return
    except SecretsError as e:
        app.call_from_thread(app.notify, f"not saved: {e}", title="config", severity="error", timeout=15)
        return
    except OSError as e:
        app.call_from_thread(app.notify, f"not saved: {e}", title="config", severity="error")
        return
    assert settings is not None
    app.call_from_thread(app.after_config_saved, settings, on_saved)
