"""MCP servers: a health table (state, transport, protocol, restarts, p50/p99 with a sparkline, badge, last
error), the selected server's stderr tail, and the actions test, restart, enable/disable for this run,
enable/disable saved to the config, add, edit, remove, import and OAuth sign-in (``console.screens.sign_in``).
Engine calls run in workers (group "servers"); config edits go through the diff-and-save flow, whose hot reload
starts or stops only the servers that changed."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Header, Label, Static

from console.config_flow import save_document
from console.format import latency, server_state_text, sparkline
from console.host import server_badges
from console.screens.base import ConsoleScreen
from console.screens.import_dialog import ImportScreen
from console.server_import import import_servers
from console.server_remove import remove_server
from console.state import Changes
from console.widgets.footer import KeyFooter
from console.widgets.keybar import KeyBar
from console.widgets.tables import ConsoleTable, cursor_key
from console.widgets.wrap_log import WrapLog

MCP_OFF = "MCP is switched off in this config (mcp.enabled: false): no server runs; entries can still be edited."
#: What the workers say while an engine operation runs (the ops the command palette also names).
OP_VERBS = {"test_server": "testing", "restart_server": "restarting", "set_server_enabled": "switching"}

COLUMNS = ("server", "state", "transport", "protocol", "restarts", "p50", "p99", "trend", "badge", "last error")


class ServersScreen(ConsoleScreen):
    CSS_PATH = "servers.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "test", "Test", id="server_test"),
        Binding("r", "restart", "Restart", id="server_restart"),
        Binding("x", "toggle_server", "On/off", id="server_toggle", tooltip="enable/disable for this run only"),
        Binding(
            "X",
            "toggle_server_save",
            "On/off+save",
            id="server_toggle_save",
            tooltip="enable/disable and save enabled: true/false to the config",
        ),
        Binding("a", "add", "Add", id="server_add"),
        Binding("e", "edit", "Edit", id="server_edit"),
        Binding("d", "remove", "Remove", id="server_remove"),
        Binding("i", "import_json", "Import", id="server_import"),
        Binding(
            "A",
            "add_from_source",
            "Add from registry",
            id="server_add_source",
            tooltip="a registry server.json, npm:PKG, pypi:PKG, a package name or a URL: fills the server form",
            show=False,  # in the palette and key help (?): the footer is full at 120 columns
        ),
        Binding("o", "tools", "Tools", id="server_tools", tooltip="the tool inspector: schemas and a call form"),
        Binding("v", "describe", "Describe", id="server_describe", tooltip="PID, uptime, command, env keys, errors"),
        Binding(
            "s",
            "sign_in",
            "Sign in",
            id="server_sign_in",
            tooltip="OAuth sign-in to a remote server: shows the URL, waits for the browser",
            show=False,  # in the palette and key help (?): the footer is full at 120 columns
        ),
    ]
    #: Attached to engines elsewhere (``--attach``) these keys say they need this console's own engine.
    LOCAL_ONLY: ClassVar[dict[str, str]] = {
        "test": "the MCP servers (each engine's own)",
        "restart": "the MCP servers (each engine's own)",
        "toggle_server": "the MCP servers (each engine's own)",
        "toggle_server_save": "the MCP servers (each engine's own)",
        "add": "the MCP servers (each engine's own)",
        "add_from_source": "the MCP servers (each engine's own)",
        "edit": "the MCP servers (each engine's own)",
        "remove": "the MCP servers (each engine's own)",
        "import_json": "the MCP servers (each engine's own)",
        "tools": "the MCP servers (each engine's own)",
        "describe": "the MCP servers (each engine's own)",
        "sign_in": "the MCP servers (each engine's own)",
    }

    def __init__(self) -> None:
        super().__init__()
        self.snapshots: dict[str, dict[str, Any]] = {}
        self.badges: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="mcp-note", classes="missing")
        yield ConsoleTable(id="servers", cursor_type="row", zebra_stripes=True)
        with Vertical(id="server-detail"):
            yield Static("", id="server-error")
            yield Label("stderr", id="stderr-title", classes="section-title")
            yield WrapLog(id="stderr", max_lines=200)
        yield KeyBar(classes="keybar")
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one("#servers", DataTable)
        for col in COLUMNS:
            table.add_column(col.capitalize() if col != "p50" and col != "p99" else col, key=col)
        table.focus()
        self.refresh_all()

    # ------------------------------------------------------------------------------------------ data

    def refresh_all(self) -> None:
        if self.is_mounted:
            self.poll()

    def apply_changes(self, changes: Changes) -> None:
        if changes.servers or changes.config_reloaded:
            self.poll()

    def poll(self) -> None:
        """Re-read the MCP host's status and the badges, and redraw the table."""
        engine = self.capp.engine
        note = self.query_one("#mcp-note", Static)
        if engine is None:  # the config's servers, "starting…", until the engine is built
            note.update(self.capp.engine_error or "engine starting…")
            note.display = True
            self._render_rows()
            return
        status = engine.server_status()
        note.update("" if status["enabled"] else MCP_OFF)
        note.display = not status["enabled"]
        self.snapshots = {str(s["id"]): s for s in status["servers"]}
        self.badges = server_badges(engine)
        self._render_rows()

    def _ids(self) -> list[str]:
        settings = self.capp.settings
        configured = list(settings.mcp.servers) if settings is not None else []
        return sorted(set(configured) | set(self.snapshots) | set(self.capp.state.servers))

    def _cells(self, sid: str) -> list[str | Text]:
        snap = self.snapshots.get(sid, {})
        live = self.capp.state.servers.get(sid)
        settings = self.capp.settings
        cfg = settings.mcp.servers.get(sid) if settings is not None else None
        if snap:
            state = "disabled" if snap["state"] == "stopped" and not snap["enabled"] else str(snap["state"])
        elif live is not None:
            state = live.state
        elif cfg is not None and not cfg.enabled:
            state = "disabled"
        elif (
            self.capp.engine is None
            and self.capp.engine_error is None
            and settings is not None
            and settings.mcp.enabled
        ):
            state = "starting…"  # the engine is being built; it starts the server next
        else:  # not running: MCP switched off, or the engine failed
            state = "configured"
        transport = str(
            snap.get("transport") or (cfg.transport if cfg else "") or (live.transport if live else "") or "-"
        )
        err = snap.get("last_error") or (live.last_error if live else None) or ""
        st = self.capp.state
        values = list(st.server_latency.get(sid, ()))
        return [
            sid,
            server_state_text(state),
            transport,
            str(snap.get("protocol_version") or (live.protocol_version if live and not snap else "") or "-"),
            str(snap.get("restarts", live.restarts if live else 0)),
            latency(st.percentile(sid, 0.5)) if values else "-",
            latency(st.percentile(sid, 0.99)) if values else "-",
            sparkline(values),
            self.badges.get(sid, "-"),
            Text(_short(str(err)), style="red"),
        ]

    def _render_rows(self) -> None:
        table = self.query_one("#servers", ConsoleTable)
        ids = self._ids()
        for key in [k for k in table.keys() if k not in ids]:
            table.remove_row(key)
        for sid in ids:
            cells = self._cells(sid)
            if table.has_row(sid):
                for col, value in zip(COLUMNS, cells, strict=True):
                    table.update_cell(sid, col, value)
            else:
                table.add_row(*cells, key=sid)
        self._show_stderr()

    def _selected(self) -> str | None:
        table = self.query_one("#servers", DataTable)
        if table.row_count == 0:
            return None
        return cursor_key(table)

    def _show_stderr(self) -> None:
        sid = self._selected()
        log = self.query_one("#stderr", WrapLog)
        log.clear()
        self.query_one("#stderr-title", Label).update(f"stderr — {sid}" if sid else "stderr")
        snap = self.snapshots.get(sid or "", {})
        live = self.capp.state.servers.get(sid or "")
        err = snap.get("last_error") or (live.last_error if live else None)
        box = self.query_one("#server-error", Static)
        box.display = bool(err)
        box.update(Text.assemble(("last error: ", "bold red"), str(err or "")))
        for line in snap.get("stderr_tail") or []:
            log.write(str(line))
        for w in snap.get("warnings") or []:
            log.write(Text(f"warning: {w}", style="yellow"))

    @on(DataTable.RowHighlighted, "#servers")
    def _highlighted(self) -> None:
        self._show_stderr()

    @on(DataTable.RowSelected, "#servers")
    def _selected_row(self) -> None:
        self.action_edit()

    # --------------------------------------------------------------------------------------- actions

    def _need_selection(self) -> str | None:
        sid = self._selected()
        if sid is None:
            self.notify("no server selected (a: add one)", title="servers", severity="warning")
        return sid

    def action_test(self) -> None:
        if (sid := self._need_selection()) is not None:
            self.run_op("test_server", sid)

    def action_restart(self) -> None:
        if (sid := self._need_selection()) is not None:
            self.run_op("restart_server", sid)

    def _enabled(self, sid: str) -> bool:
        """Whether the server is on now: the running engine's view, else the config's (MCP switched off)."""
        if sid in self.snapshots:
            return bool(self.snapshots[sid]["enabled"])
        settings = self.capp.settings
        cfg = settings.mcp.servers.get(sid) if settings is not None else None
        return cfg.enabled if cfg is not None else True

    def action_toggle_server(self) -> None:
        if (sid := self._need_selection()) is not None:
            self.run_op("set_server_enabled", sid, not self._enabled(sid))

    def action_toggle_server_save(self) -> None:
        if (sid := self._need_selection()) is not None:
            self.prepare_toggle_save(sid, not self._enabled(sid))

    @work(group="servers", name="server-op", exit_on_error=False)
    async def run_op(self, op: str, sid: str, enabled: bool = True) -> None:
        """``op`` is "test_server", "restart_server" or "set_server_enabled" (``enabled`` is for the last)."""
        verb = OP_VERBS[op]
        engine = self.capp.require_engine()
        if engine is None:
            return
        if op != "test_server" and not engine.settings.mcp.enabled:  # a test probes the config entry alone
            self.notify(MCP_OFF, title="servers", severity="warning")
            return
        self.notify(f"{verb} {sid}…", title="servers")
        try:
            if op == "test_server":
                summary = _test_summary(await engine.test_server(sid))
            elif op == "restart_server":
                summary = _state_summary(await engine.restart_server(sid))
            else:
                summary = _state_summary(await engine.set_server_enabled(sid, enabled))
        except Exception as e:  # an unknown server, a probe that raised
            self.notify(f"{sid}: {e}", title="servers", severity="error", timeout=10)
            return
        self.notify(f"{sid}: {summary}", title="servers", timeout=8)
        self.poll()

    @work(thread=True, group="config", name="server-toggle-save")
    def prepare_toggle_save(self, sid: str, enabled: bool) -> None:
        """Write ``enabled`` into the server's config entry; the save's hot reload starts or stops the server."""
        from engine.config import ConfigDocument, ConfigError

        try:
            doc = ConfigDocument.load(self.capp.config_path)
            if not isinstance(doc.get(("mcp", "servers", sid), None), dict):  # removed from the file meanwhile
                self.app.call_from_thread(
                    self.notify, f"{self.capp.config_path} has no server {sid!r}", title="servers", severity="error"
                )
                return
            doc.set(("mcp", "servers", sid, "enabled"), enabled)
        except (ConfigError, KeyError) as e:
            self.app.call_from_thread(self.notify, str(e), title="servers", severity="error")
            return
        if not doc.diff():  # the file says so already; only this run differs (an earlier x)
            self.app.call_from_thread(
                self.notify,
                f"the config already has enabled: {str(enabled).lower()} for {sid}; switching it for this run",
                title="servers",
            )
            self.app.call_from_thread(self.run_op, "set_server_enabled", sid, enabled)
            return
        title = f"{'Enable' if enabled else 'Disable'} server {sid} in the config"
        self.app.call_from_thread(save_document, self.capp, doc, title)

    def action_add(self) -> None:
        from console.screens.server_form import ServerForm

        self.app.push_screen(ServerForm(None))

    def action_add_from_source(self) -> None:
        from console.screens.add_source import start_add_from_source

        start_add_from_source(self)

    def action_edit(self) -> None:
        from console.screens.server_form import ServerForm

        if (sid := self._need_selection()) is not None:
            self.app.push_screen(ServerForm(sid))

    def action_tools(self) -> None:
        from console.screens.tool_inspector import ToolInspector

        if (sid := self._need_selection()) is not None:
            self.app.push_screen(ToolInspector(sid))

    def action_describe(self) -> None:
        from console.screens.server_describe import ServerDescribe

        if (sid := self._need_selection()) is not None:
            self.app.push_screen(ServerDescribe(sid))

    def action_sign_in(self) -> None:
        from console.screens.sign_in import SignInScreen

        if (sid := self._need_selection()) is None:
            return
        settings = self.capp.settings
        cfg = settings.mcp.servers.get(sid) if settings is not None else None
        if cfg is None or cfg.auth is None:
            self.notify(
                f"{sid} does not sign in (only an http server with auth.oauth does)",
                title="servers",
                severity="warning",
            )
            return

        def done(_signed_in: bool | None) -> None:
            self.poll()

        self.app.push_screen(SignInScreen(sid), done)

    def action_remove(self) -> None:
        sid = self._need_selection()
        if sid is not None:
            remove_server(self.capp, sid)  # and then the keyring secrets only it used, if the operator says so

    def action_import_json(self) -> None:
        def answered(choice: tuple[str, bool] | None) -> None:
            if choice:
                self.prepare_import(*choice)

        self.app.push_screen(ImportScreen(), answered)

    @work(thread=True, group="config", name="server-import")
    def prepare_import(self, path: str, plaintext: bool = False) -> None:
        import_servers(self.capp, path, plaintext)  # then its inputs form and the diff


#: How much of a server's last error the table shows; the detail under it shows all of it, wrapped.
ERROR_CELL = 40


def _short(error: str) -> str:
    """The first line of an error, cut to ``ERROR_CELL`` characters with an ellipsis."""
    line = error.strip().splitlines()[0] if error.strip() else ""
    return line if len(line) <= ERROR_CELL and line == error.strip() else line[: ERROR_CELL - 1] + "…"


def _test_summary(report: dict[str, Any]) -> str:
    """One line from ``Engine.test_server``'s report: passed or why not, the tool count, the timings."""
    head = "test passed" if report["ok"] else f"test failed: {report['error']}"
    timings = ", ".join(f"{k} {v} ms" for k, v in report["timings_ms"].items())
    return f"{head}; {len(report['tools'])} tool(s) {timings}".strip()


def _state_summary(snapshot: dict[str, Any]) -> str:
    """One line from a server's status snapshot (after restart or enable/disable)."""
    on = "enabled" if snapshot["enabled"] else "disabled"
    return f"{on}, state {snapshot['state']}, restarts {snapshot['restarts']}"
