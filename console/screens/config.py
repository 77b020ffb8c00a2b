"""Config: which file the console edits, whether it is valid, its text; reload into the running engine and
validate on demand. File reading and validation run in thread workers (group "config").

``r`` always ends in a state the screen says: reloaded, the reload's error, the engine still starting, or (when the
engine never came up because the file was invalid at start-up) the engine being started from the fixed file.
"""

from __future__ import annotations

from typing import ClassVar

from rich.syntax import Syntax
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Header, Label, Static

from console.launch import apply_overrides
from console.screens.base import ConsoleScreen
from console.widgets.footer import KeyFooter
from console.widgets.keybar import KeyBar
from engine.config import ConfigError, Settings, load_settings
from engine.config.loader import read_config_text


def check(path: str) -> tuple[str, Settings | None, str]:
    """Blocking: (file text, settings or None, problems)."""
    try:
        text = read_config_text(path)
    except ConfigError as e:
        return "", None, e.render()
    try:
        return text, load_settings(path), ""
    except ConfigError as e:
        return text, None, e.render()


class ConfigScreen(ConsoleScreen):
    CSS_PATH = "config.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "reload", "Reload", id="config_reload"),
        Binding("v", "validate", "Validate", id="config_validate"),
    ]
    #: Attached to engines elsewhere (``--attach``) these keys say they need this console's own engine.
    LOCAL_ONLY: ClassVar[dict[str, str]] = {
        "reload": "the config (each engine's own file)",
        "validate": "the config (each engine's own file)",
    }

    def compose(self) -> ComposeResult:
        yield Header()
        yield Label("", id="config-path", classes="section-title")
        yield Static("", id="config-status")
        with VerticalScroll(id="config-body"):
            yield Static("", id="config-text")
        yield KeyBar(classes="keybar")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.refresh_all()

    def refresh_all(self) -> None:
        if not self.is_mounted:
            return
        self.query_one("#config-path", Label).update(f"Config file: {self.capp.config_path}")
        self.run_check(apply=False)

    def action_validate(self) -> None:
        self.run_check(apply=False)

    def action_reload(self) -> None:
        self.run_check(apply=True)

    @work(thread=True, group="config-check", name="config-check", exclusive=True)
    def run_check(self, apply: bool) -> None:
        text, settings, problems = check(str(self.capp.config_path))
        self.app.call_from_thread(self._show, text, settings, problems, apply)

    def _show(self, text: str, settings: Settings | None, problems: str, apply: bool) -> None:
        status = self.query_one("#config-status", Static)
        if settings is None:
            status.update(Text(f"✖ invalid — nothing was applied\n{problems}", style="red"))
        else:
            status.update(
                Text("✔ valid" + (" — reloading…" if apply else "  (r: reload into the engine)"), style="green")
            )
        self.query_one("#config-text", Static).update(
            Syntax(text, "yaml", theme="ansi_dark", line_numbers=True, word_wrap=True)
        )
        if apply and settings is not None:
            self.apply_reload(settings)

    def _status(self, text: str, style: str) -> None:
        self.query_one("#config-status", Static).update(Text(text, style=style))

    @work(group="config", name="config-reload", exit_on_error=False)
    async def apply_reload(self, settings: Settings) -> None:
        app = self.capp
        if app.engine is None or (app.engine_error and not app.engine_running):
            await self._start_engine()
            return
        engine = app.require_engine()
        if engine is None:  # still starting: its config is the file as it was; say so instead of "reloading…"
            self._status("✔ valid — not reloaded: the engine is still starting (press r again once it runs)", "yellow")
            return
        try:
            await engine.reload(apply_overrides(app, settings))
        except Exception as e:  # a component refused the new config
            self._status(f"✖ reload failed — the engine runs the previous config\n{type(e).__name__}: {e}", "red")
            self.notify(f"reload failed: {type(e).__name__}: {e}", title="config", severity="error")
            return
        self._status("✔ valid — reloaded into the engine", "green")
        self.notify("config reloaded", title="config")
        app.config_changed()

    async def _start_engine(self) -> None:
        """The engine never ran (the file was invalid at start-up, or it failed to start): start one from the file
        as it is now. A failed engine is stopped first (it may hold servers it started)."""
        app = self.capp
        failed, app.engine = app.engine, None
        if failed is not None and (failed.started or len(failed.tasks)):
            await failed.stop()
        app.engine_error = None
        app.show_engine_status()
        self._status("✔ valid — starting the engine with it…", "green")
        app.load_engine()
