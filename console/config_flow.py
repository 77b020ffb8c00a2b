"""Saving config edits: show the diff, write atomically (comments kept), then hot-reload the running engine.

Every save in the console goes through ``save_document``: nothing is written until the operator has seen the
diff and said yes; the file write runs in a thread worker and the reload in the app's loop (group "config").
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from console.screens.modals import DiffScreen
from engine.config import ConfigDocument, ConfigError, Settings

if TYPE_CHECKING:
    from console.app import AvaConsole
    from engine.app import Engine


class FeatureMissing(RuntimeError):
    """The engine in this build has no such operation (a layer that has not landed)."""


async def call_engine(engine: Engine, name: str, *args: Any) -> Any:
    """Call a public Engine method that may be sync or async; ``FeatureMissing`` if this build lacks it."""
    fn = getattr(engine, name, None)
    if not callable(fn):
        raise FeatureMissing(f"this engine has no {name}() yet (the MCP host has not landed)")
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


async def server_snapshots(engine: Engine) -> list[dict[str, Any]]:
    status = await call_engine(engine, "server_status")
    servers = status.get("servers", []) if isinstance(status, dict) else status
    return [dict(s) for s in servers or []]


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
    try:
        settings = doc.save()
    except ConfigError as e:
        app.call_from_thread(app.notify, f"not saved:\n{e.render()}", title="config", severity="error",
                             timeout=15)
        return
    except OSError as e:
        app.call_from_thread(app.notify, f"not saved: {e}", title="config", severity="error")
        return
    assert settings is not None
    app.call_from_thread(app.after_config_saved, settings, on_saved)
