"""Outbox: the e-mail the engine has queued (transcripts, call summaries, tests) and where each message stands.

Pending, sending, sent and failed messages, newest first, with the server's reason for a failure; ``r`` sends the
highlighted message again now, ``d`` drops it (after a confirmation). The table reloads when an ``email.*`` event
arrives and every few seconds (a retry's next attempt time moves without an event).
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Header, Label, Static

from console.screens.base import ConsoleScreen
from console.screens.modals import ConfirmScreen
from console.state import Changes
from console.widgets.footer import KeyFooter
from console.widgets.keybar import KeyBar
from console.widgets.tables import ConsoleTable, cursor_key

if TYPE_CHECKING:
    from engine import OutboxMessage

STATUS_STYLE = {"sent": "green", "failed": "bold red", "pending": "yellow", "sending": "cyan", "held": "dim"}
COLUMNS = ("Status", "Tries", "Reason", "To", "Kind", "Subject", "Updated")
#: The table shows the start of a failure's reason; the line under it shows the highlighted one whole.
REASON_CELL = 40


class OutboxScreen(ConsoleScreen):
    CSS_PATH = "outbox.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "retry", "Send again now", id="outbox_retry"),
        Binding("d", "drop", "Drop", id="outbox_drop"),
    ]
    #: Attached to engines elsewhere (``--attach``) these keys say they need this console's own engine.
    LOCAL_ONLY: ClassVar[dict[str, str]] = {
        "retry": "the e-mail outbox (each engine's own)",
        "drop": "the e-mail outbox (each engine's own)",
    }

    def __init__(self) -> None:
        super().__init__()
        self._messages: dict[str, OutboxMessage] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Label("E-mail outbox — transcripts and call summaries, newest first", classes="section-title")
        yield Static("", id="outbox-counts")
        yield ConsoleTable(id="outbox", cursor_type="row", zebra_stripes=True)
        yield Static("", id="outbox-detail")
        yield KeyBar(classes="keybar")
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one("#outbox", DataTable)
        for col in COLUMNS:
            table.add_column(col, key=col.lower())
        table.focus()
        self.set_interval(5.0, self.refresh_all)
        self.refresh_all()

    def apply_changes(self, changes: Changes) -> None:
        if any(line.type.startswith("email.") for line in changes.log):
            self.refresh_all()

    def refresh_all(self) -> None:
        if not self.is_mounted:
            return
        engine = self.capp.engine
        counts = self.query_one("#outbox-counts", Static)
        table = self.query_one("#outbox", DataTable)
        if engine is None:
            counts.update(Text("engine starting… the outbox shows here once it runs", style="dim"))
            return
        try:
            messages = engine.outbox_messages()
        except Exception as e:  # the outbox file cannot be opened (permissions, a broken database)
            counts.update(Text(f"outbox unavailable: {e}", style="bold red"))
            return
        tally: dict[str, int] = {}
        for m in messages:
            tally[m.status] = tally.get(m.status, 0) + 1
        summary = " · ".join(f"{n} {s}" for s, n in sorted(tally.items())) or "empty"
        email_on = engine.settings.tools.email.enabled
        counts.update(Text(f"{summary}" + ("" if email_on else "  (tools.email is off)"), style="bold"))
        selected = cursor_key(table) if table.row_count else None
        table.clear()
        now = time.time()
        for m in messages:
            ago = max(0, int(now - m.updated_at))
            reason = m.last_error or ""
            table.add_row(
                Text(m.status + (" (resent)" if m.resent else ""), style=STATUS_STYLE.get(m.status, "")),
                str(m.attempts),
                reason if len(reason) <= REASON_CELL else reason[: REASON_CELL - 1] + "…",
                ", ".join(m.to),
                m.kind,
                m.subject or "(rendered when sent)",
                f"{ago // 60}m{ago % 60:02d}s ago",
                key=m.message_id,
            )
        self._messages = {m.message_id: m for m in messages}
        if selected is not None and selected in table.rows:
            table.move_cursor(row=table.get_row_index(selected))
        self._show_detail(self._selected())

    @on(DataTable.RowHighlighted, "#outbox")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(event.row_key.value)

    def _show_detail(self, message_id: str | None) -> None:
        detail = self.query_one("#outbox-detail", Static)
        m = self._messages.get(message_id or "")
        if m is None:
            detail.update("")
            return
        line = Text(f"{m.message_id}  ", style="dim")
        line.append(f"{m.kind} to {', '.join(m.to)}" + (f" · call {m.call_id}" if m.call_id else ""))
        if m.last_error:
            line.append(f"\n{m.last_error}", style="red" if m.status == "failed" else "yellow")
        if m.next_attempt_at is not None:
            wait = max(0, int(m.next_attempt_at - time.time()))
            when = time.strftime("%H:%M:%S", time.localtime(m.next_attempt_at))
            line.append(f"\nnext attempt at {when} (in {wait // 60}m{wait % 60:02d}s)", style="dim")
        detail.update(line)

    def _selected(self) -> str | None:
        table = self.query_one("#outbox", DataTable)
        return cursor_key(table) if table.row_count else None

    def action_retry(self) -> None:
        engine, message_id = self.capp.engine, self._selected()
        if engine is None or message_id is None:
            self.notify("no message selected", title="outbox", severity="warning")
            return
        if engine.retry_email(message_id):
            self.notify(f"sending {message_id} again now", title="outbox")
        else:
            self.notify("only a pending or failed message can be sent again", title="outbox", severity="warning")
        self.refresh_all()

    def action_drop(self) -> None:
        engine, message_id = self.capp.engine, self._selected()
        if engine is None or message_id is None:
            self.notify("no message selected", title="outbox", severity="warning")
            return

        def done(yes: bool | None) -> None:
            if yes and engine.drop_email(message_id):
                self.notify(f"dropped {message_id}", title="outbox")
            elif yes:
                self.notify("it is being sent right now; try again in a moment", title="outbox", severity="warning")
            self.refresh_all()

        self.app.push_screen(ConfirmScreen(f"Drop {message_id} from the outbox?", "It will not be sent."), done)
