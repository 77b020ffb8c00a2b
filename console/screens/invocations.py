"""Tool log: every tool invocation live (time, call, exposed name, server, status, latency, cache hit),
filterable by status and searchable; Enter opens the arguments and result with secrets masked."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.coordinate import Coordinate
from textual.screen import ModalScreen
from textual.widgets import DataTable, Header, Input, Label, Static

from console.attach import engine_of, local_id
from console.crash_guard import ContainErrors
from console.format import latency, pretty, status_text
from console.screens.base import ConsoleScreen
from console.state import Changes, Invocation
from console.widgets.footer import KeyFooter
from console.widgets.keybar import KeyBar
from console.widgets.tables import ConsoleTable, cursor_key
from engine import Redactor

if TYPE_CHECKING:
    from console.console_port import Console

STATUSES = ("all", "success", "error", "timeout", "rejected", "cancelled", "running")
MAX_ROWS = 2000
COLUMNS = ("time", "call", "tool", "server", "status", "latency", "cache")
#: An attached console's (``--attach``): whose call it was, then the engine's own call id.
ATTACHED_COLUMNS = ("time", "engine", "call", "tool", "server", "status", "latency", "cache")


def running_text(i: Invocation) -> Text:
    """A running call's status with the progress its server reported: ``running 50%``, or ``running 7`` without
    a total (``tool.progress``)."""
    out = status_text(i.status)
    if i.waiting is not None:  # a tool's question (engine.elicitation) waits for a person
        out.append(f" · waiting for {i.waiting}", "yellow")
    if i.progress is None:
        return out
    total = i.progress_total
    if total is not None and total > 0 and 0 <= i.progress <= total:
        out.append(f" {int(100 * i.progress / total)}%")
    else:
        out.append(f" {i.progress:g}")
    return out


class InvocationDetail(ContainErrors, ModalScreen[None]):
    CSS_PATH = "invocations.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Close", id="detail_close"),
    ]

    def __init__(self, inv: Invocation, secrets: set[str]) -> None:
        super().__init__()
        self.inv = inv
        self.redactor = Redactor(secrets)

    def compose(self) -> ComposeResult:
        i = self.inv
        with VerticalScroll(id="detail"):
            yield Label(f"{i.exposed_name} — {i.call_id} / {i.tool_call_id}", classes="section-title")
            head = Text()
            head.append_text(status_text(i.status))
            head.append(f"   server {i.server or '-'} · tool {i.tool} · {latency(i.latency_ms)}")
            head.append("   cache hit" if i.cache_hit else "")
            yield Static(head)
            yield Label("Arguments", classes="section-title")
            yield Static(pretty(self.redactor.for_display(i.arguments)), id="detail-args", markup=False)
            yield Label("Result", classes="section-title")
            result = {"status": i.status, "message": i.message, "data": i.data}
            yield Static(pretty(self.redactor.for_display(result)), id="detail-result", markup=False)
            yield Label("Esc closes", classes="muted")


def open_invocation(app: Console, key: str | None) -> None:
    """Show the invocation whose row key (its ``seq``) is ``key``, secrets masked (Tool log and Calls screen)."""
    inv = next((i for i in app.state.invocations if str(i.seq) == key), None)
    if inv is None:
        return
    engine = app.engine
    app.push_screen(InvocationDetail(inv, engine.known_secrets() if engine is not None else set()))


class ToolLogScreen(ConsoleScreen):
    CSS_PATH = "invocations.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "search", "Search", id="log_filter"),
        Binding("f", "cycle_status", "Status filter", id="log_status"),
        Binding("enter", "detail", "Details", id="log_detail"),
        Binding("escape", "focus_table", "Table", id="log_focus", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.status_filter = "all"
        self.search = ""

    def compose(self) -> ComposeResult:
        yield Header()
        with Horizontal(id="log-bar"):
            yield Input(placeholder="search: call, tool, server, status, message  (/ to focus)", id="log-search")
            yield Label("status: all", id="log-status")
            yield Label("", id="log-count", classes="muted")
        # the search box above is this table's filter (it matches messages too), so ``/`` stays the screen's
        yield ConsoleTable(id="invocations", cursor_type="row", zebra_stripes=True, filterable=False)
        yield KeyBar(classes="keybar")
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one("#invocations", DataTable)
        for col in self.table_columns():
            table.add_column(col.capitalize(), key=col)
        self.refresh_all()
        table.focus()

    def _keep(self, i: Invocation) -> bool:
        if self.status_filter != "all" and i.status != self.status_filter:
            return False
        return not self.search or i.matches(self.search)

    def table_columns(self) -> tuple[str, ...]:
        return ATTACHED_COLUMNS if self.capp.attached else COLUMNS

    def _cells(self, i: Invocation) -> list[str | Text]:
        cache = Text("hit", style="cyan") if i.cache_hit else Text("-", style="dim")
        whose = [engine_of(i.call_id) or "-", local_id(i.call_id)] if self.capp.attached else [i.call_id]
        return [
            self.capp.clock.hms(i.ts),
            *whose,
            i.exposed_name,
            i.server or "-",
            running_text(i) if i.status == "running" else status_text(i.status),
            latency(i.latency_ms),
            cache,
        ]

    def _count(self) -> None:
        table = self.query_one("#invocations", DataTable)
        total = len(self.capp.state.invocations)
        self.query_one("#log-count", Label).update(f"{table.row_count} shown of {total}")

    def refresh_all(self) -> None:
        if not self.is_mounted:
            return
        table = self.query_one("#invocations", DataTable)
        table.clear()
        rows = [i for i in self.capp.state.invocations if self._keep(i)][-MAX_ROWS:]
        for i in rows:
            table.add_row(*self._cells(i), key=str(i.seq))
        if rows:
            table.move_cursor(row=table.row_count - 1)
        self._count()

    def apply_changes(self, changes: Changes) -> None:
        if not (changes.invocations_added or changes.invocations_changed):
            return
        table = self.query_one("#invocations", ConsoleTable)
        follow = table.row_count == 0 or table.cursor_row >= table.row_count - 1
        for i in changes.invocations_added:
            if self._keep(i):
                table.add_row(*self._cells(i), key=str(i.seq))
        for i in changes.invocations_changed:
            key = str(i.seq)
            if table.has_row(key):
                if self._keep(i):
                    for col, value in zip(self.table_columns(), self._cells(i), strict=True):
                        table.update_cell(key, col, value, update_width=True)  # "running 50%" grows
                else:
                    table.remove_row(key)
            elif self._keep(i):
                table.add_row(*self._cells(i), key=key)
        while table.row_count > MAX_ROWS:
            first = table.coordinate_to_cell_key(Coordinate(0, 0)).row_key
            table.remove_row(first)
        if follow and table.row_count:
            table.move_cursor(row=table.row_count - 1, animate=False)
        self._count()

    @on(Input.Changed, "#log-search")
    def _search_changed(self, event: Input.Changed) -> None:
        self.search = event.value.strip()
        self.refresh_all()

    @on(Input.Submitted, "#log-search")
    def _search_done(self) -> None:
        self.query_one("#invocations", DataTable).focus()

    @on(DataTable.RowSelected, "#invocations")
    def _row_selected(self) -> None:
        self.action_detail()

    def action_search(self) -> None:
        self.query_one("#log-search", Input).focus()

    def action_focus_table(self) -> None:
        self.query_one("#invocations", DataTable).focus()

    def action_cycle_status(self) -> None:
        self.status_filter = STATUSES[(STATUSES.index(self.status_filter) + 1) % len(STATUSES)]
        self.query_one("#log-status", Label).update(f"status: {self.status_filter}")
        self.refresh_all()

    def action_detail(self) -> None:
        table = self.query_one("#invocations", DataTable)
        if table.row_count == 0:
            self.notify("no invocation to show", title="tool log", severity="warning")
            return
        open_invocation(self.capp, cursor_key(table))
