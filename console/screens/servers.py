"""MCP servers: a health table (state, transport, protocol, restarts, p50/p99 with a sparkline, badge, last
error), the selected server's stderr tail, and the actions test, restart, enable/disable, add, edit, remove and
import. Engine calls run in workers (group "servers"); config edits go through the diff-and-save flow."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.widgets import DataTable, Footer, Header, Label, RichLog, Static

from console.config_flow import FeatureMissing, call_engine, save_document, server_snapshots
from console.format import latency, server_state_text, sparkline
from console.host import MISSING_MCP, server_badges
from console.importer import McpImportError, parse_mcp_json
from console.screens.base import ConsoleScreen
from console.screens.import_dialog import ImportScreen
from console.screens.modals import ConfirmScreen
from console.state import Changes
from console.widgets.keybar import KeyBar
from console.widgets.tables import cursor_key
from engine.config import ConfigDocument, ConfigError

COLUMNS = ("server", "state", "transport", "protocol", "restarts", "p50", "p99", "trend", "badge", "last error")


class ServersScreen(ConsoleScreen):
    CSS_PATH = "servers.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("t", "test", "Test", id="server_test"),
        Binding("r", "restart", "Restart", id="server_restart"),
        Binding("x", "toggle_server", "On/off", id="server_toggle"),
        Binding("a", "add", "Add", id="server_add"),
        Binding("e", "edit", "Edit", id="server_edit"),
        Binding("d", "remove", "Remove", id="server_remove"),
        Binding("i", "import_json", "Import", id="server_import"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.snapshots: dict[str, dict[str, Any]] = {}
        self.badges: dict[str, str] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Static("", id="mcp-note", classes="missing")
        yield DataTable(id="servers", cursor_type="row", zebra_stripes=True)
        with Vertical(id="server-detail"):
            yield Label("stderr", id="stderr-title", classes="section-title")
            yield RichLog(id="stderr", wrap=True, markup=False, max_lines=200)
        yield KeyBar(classes="keybar")
        yield Footer()

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

    @work(group="server-poll", name="server-poll", exclusive=True, exit_on_error=False)
    async def poll(self) -> None:
        engine = self.capp.engine
        note = self.query_one("#mcp-note", Static)
        if engine is None:
            note.update(self.capp.engine_error or "engine starting…")
            self._render_rows()
            return
        try:
            snaps = await server_snapshots(engine)
            note.display = False
        except FeatureMissing:
            snaps = []
            note.update(MISSING_MCP)
            note.display = True
        self.snapshots = {str(s.get("id")): s for s in snaps}
        self.badges = server_badges(engine)
        self._render_rows()

    def _ids(self) -> list[str]:
        engine = self.capp.engine
        configured = list(engine.settings.mcp.servers) if engine is not None else []
        return sorted(set(configured) | set(self.snapshots))

    def _cells(self, sid: str) -> list[str | Text]:
        snap = self.snapshots.get(sid, {})
        live = self.capp.state.servers.get(sid)
        state = live.state if live is not None and not snap else str(snap.get("state", "unknown"))
        if not snap and live is None:
            state = "configured"
        engine = self.capp.engine
        cfg = engine.settings.mcp.servers.get(sid) if engine is not None else None
        transport = str(snap.get("transport") or (cfg.transport if cfg else "-"))
        err = snap.get("last_error") or (live.last_error if live else None) or ""
        st = self.capp.state
        values = list(st.server_latency.get(sid, ()))
        return [
            sid, server_state_text(state), transport, str(snap.get("protocol_version") or "-"),
            str(snap.get("restarts", live.restarts if live else 0)),
            latency(st.percentile(sid, 0.5)) if values else "-",
            latency(st.percentile(sid, 0.99)) if values else "-",
            sparkline(values), self.badges.get(sid, "-"), Text(str(err)[:80], style="red"),
        ]

    def _render_rows(self) -> None:
        table = self.query_one("#servers", DataTable)
        ids = self._ids()
        for key in [k for k in list(table.rows) if k.value not in ids]:
            table.remove_row(key)
        for sid in ids:
            cells = self._cells(sid)
            if sid in table.rows:
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
        log = self.query_one("#stderr", RichLog)
        log.clear()
        self.query_one("#stderr-title", Label).update(f"stderr — {sid}" if sid else "stderr")
        snap = self.snapshots.get(sid or "", {})
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

    def action_toggle_server(self) -> None:
        if (sid := self._need_selection()) is not None:
            snap = self.snapshots.get(sid, {})
            enabled = bool(snap.get("enabled", True))
            self.run_op("set_server_enabled", sid, not enabled)

    @work(group="servers", name="server-op", exit_on_error=False)
    async def run_op(self, op: str, sid: str, *args: Any) -> None:
        engine = self.capp.require_engine()
        if engine is None:
            return
        verb = {"test_server": "testing", "restart_server": "restarting", "set_server_enabled": "switching"}[op]
        self.notify(f"{verb} {sid}…", title="servers")
        try:
            result = await call_engine(engine, op, sid, *args)
        except Exception as e:  # unknown server, a failed probe, a missing MCP host
            self.notify(f"{sid}: {e}", title="servers", severity="error", timeout=10)
            return
        self.notify(f"{sid}: {_summary(op, result)}", title="servers", timeout=8)
        self.poll()

    def action_add(self) -> None:
        from console.screens.server_form import ServerForm

        self.app.push_screen(ServerForm(None))

    def action_edit(self) -> None:
        from console.screens.server_form import ServerForm

        if (sid := self._need_selection()) is not None:
            self.app.push_screen(ServerForm(sid))

    def action_remove(self) -> None:
        sid = self._need_selection()
        if sid is None:
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.prepare_remove(sid)

        self.app.push_screen(ConfirmScreen(f"Remove server {sid!r} from the config?",
                                           "You will see the diff before anything is written."), answered)

    @work(thread=True, group="config", name="server-remove")
    def prepare_remove(self, sid: str) -> None:
        try:
            doc = ConfigDocument.load(self.capp.config_path)
            doc.remove_server(sid)
        except (ConfigError, KeyError) as e:
            self.app.call_from_thread(self.notify, str(e), title="servers", severity="error")
            return
        self.app.call_from_thread(save_document, self.capp, doc, f"Remove server {sid}")

    def action_import_json(self) -> None:
        def answered(path: str | None) -> None:
            if path:
                self.prepare_import(path)

        self.app.push_screen(ImportScreen(), answered)

    @work(thread=True, group="config", name="server-import")
    def prepare_import(self, path: str) -> None:
        try:
            text = Path(path).expanduser().read_text(encoding="utf-8")
            doc = ConfigDocument.load(self.capp.config_path)
            existing = set(doc.get(("mcp", "servers"), {}) or {})
            servers = parse_mcp_json(text, existing)
            for sid, cfg in servers.items():
                doc.set_server(sid, cfg)
        except (OSError, McpImportError, ConfigError, KeyError) as e:
            self.app.call_from_thread(self.notify, f"import failed: {e}", title="servers", severity="error")
            return
        title = f"Import {len(servers)} server(s) from {path}: {', '.join(servers)}"
        self.app.call_from_thread(save_document, self.capp, doc, title)


def _summary(op: str, result: Any) -> str:
    if not isinstance(result, dict):
        return "done"
    if op == "test_server":
        ok = result.get("ok", result.get("status") == "ok")
        tools = result.get("tools") or []
        err = result.get("error") or result.get("last_error")
        head = "test passed" if ok else f"test failed: {err}"
        timing = result.get("timings_ms") or result.get("timings") or {}
        timing_text = ", ".join(f"{k} {v} ms" for k, v in dict(timing).items()) if timing else ""
        return f"{head}; {len(tools)} tool(s) {timing_text}".strip()
    return f"state {result.get('state', '?')}, restarts {result.get('restarts', 0)}"
