"""Server form: every key of one MCP server's config, with the fields of the chosen transport, live validation
under each field, env/header rows with "store in keyring" (ticked by default), Test (the unsaved form, expanded
as the loader would, through the engine's test) and Save (diff → atomic save keeping comments → hot reload, which
restarts only this server). Esc leaves (an edited form asks first: save, discard or go back); nothing is written
before Save.

The action buttons and the result (test passed, fields need attention) sit at the top, visible without scrolling
at 80×24; a failed check scrolls to and focuses the first field that needs attention. Fields take two columns
when the screen is wide enough. Secrets: see ``console.server_secrets`` (keyring by default, plain text only after
an explicit yes, never shown in a diff)."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Button, Header, Input, Label, Select, Static, Switch, TextArea

from console.screens.base import ConsoleScreen
from console.screens.leave_form import FormGuard
from console.server_model import (
    KV,
    FormValues,
    check_field,
    check_kv,
    from_config,
    model_errors,
    to_config,
)
from console.server_secrets import plan_secrets, save_with_secrets
from console.widgets.footer import KeyFooter
from console.widgets.kv_row import KVRow
from engine.config import ConfigDocument, ConfigError, ExpansionError
from engine.config.expand import expand_entry
from engine.config.secrets import lookup_secret

TEXT_FIELDS = (
    ("id", "Server id"),
    ("command", "Command"),
    ("cwd", "Working dir"),
    ("url", "URL"),
    ("target", "Target"),
    ("mode", "Protocol mode"),
    ("connect_timeout_ms", "Connect timeout ms"),
    ("max_restarts", "Max restarts"),
    ("backoff_ms", "Backoff ms"),
    ("backoff_max_ms", "Backoff max ms"),
    ("stable_after_ms", "Stable after ms"),
    ("timeout_ms", "Tool timeout ms"),
    ("slow_response_threshold_ms", "Slow after ms"),
    ("slow_response_message", "Slow message"),
)
SWITCHES = (
    ("enabled", "Enabled"),
    ("restart_enabled", "Restart on crash"),
    ("expose_unlisted", "Expose unlisted tools"),
    ("calibrate", "Calibrate latency"),
)
TRANSPORT_ONLY = {"command": "stdio", "cwd": "stdio", "url": "http sse", "target": "inprocess bundled"}
#: From this width on, the fields take two columns.
TWO_COLUMNS_FROM = 110


class ServerForm(ConsoleScreen):
    CSS_PATH = "server_form.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+t", "test", "Test", id="form_test", priority=True),
        Binding("ctrl+s", "save", "Save", id="form_save", priority=True),
        Binding("escape", "cancel", "Cancel", id="form_cancel"),
    ]

    def __init__(self, server_id: str | None, *, prefill: FormValues | None = None, intro: str = "") -> None:
        """``prefill``: the values of a new server (from "add from registry/package"), ``intro`` said above them."""
        super().__init__()
        self.server_id = server_id
        self.prefill = prefill
        self.intro = intro
        self.taken: set[str] = set()
        self.loaded = False
        self.guard = FormGuard(self, save=self.action_save, close=self._close, what="the server form")

    # ------------------------------------------------------------------------------------------ layout

    def _row(self, name: str, label: str, widget: Widget) -> Horizontal:
        classes = "field" + (f" only-{TRANSPORT_ONLY[name].replace(' ', ' only-')}" if name in TRANSPORT_ONLY else "")
        return Horizontal(
            Label(label, classes="flabel"),
            Vertical(widget, Static("", id=f"msg-{name}", classes="fmsg"), classes="fcell"),
            classes=classes,
            id=f"row-{name}",
        )

    def compose(self) -> ComposeResult:
        yield Header()
        title = f"Edit server {self.server_id}" if self.server_id else "Add an MCP server"
        yield Label(title, classes="section-title")
        with Horizontal(id="form-actions"):
            yield Button("Test ^T", id="do-test", variant="primary")
            yield Button("Save ^S", id="do-save", variant="success")
            yield Button("Cancel", id="do-cancel")
            yield Static("Ctrl+T tests the unsaved form · Ctrl+S saves (diff first)", id="form-result")
        with VerticalScroll(id="form"), Vertical(id="fields"):
            yield self._row("id", "Server id", Input(id="f-id", placeholder="e.g. weather"))
            yield self._row(
                "transport",
                "Transport",
                Select(
                    [(t, t) for t in ("stdio", "http", "sse", "inprocess", "bundled")],
                    value="stdio",
                    allow_blank=False,
                    id="f-transport",
                ),
            )
            for name, label in TEXT_FIELDS[1:]:
                hint = "e.g. {python} -m my_server, or npx -y pkg" if name == "command" else ""
                yield self._row(name, label, Input(id=f"f-{name}", placeholder=hint))
            yield self._row(
                "start",
                "Start",
                Select([("eager", "eager"), ("lazy", "lazy")], value="eager", allow_blank=False, id="f-start"),
            )
            for name, label in SWITCHES:
                yield self._row(name, label, Switch(id=f"f-{name}", value=name != "calibrate"))
            with Vertical(id="env-block", classes="kv-block only-stdio"):
                yield Label("Environment", classes="section-title")
                yield Vertical(id="env-rows")
                yield Button("+ env variable", id="add-env")
            with Vertical(id="headers-block", classes="kv-block only-http only-sse"):
                yield Label("Headers", classes="section-title")
                yield Vertical(id="headers-rows")
                yield Button("+ header", id="add-header")
            yield self._row("tools", "Tools (YAML list)", TextArea(id="f-tools", language="yaml"))
        yield KeyFooter()

    def on_mount(self) -> None:
        self._columns(self.size.width)
        self.load_form()

    def on_resize(self) -> None:
        self._columns(self.size.width)

    def _columns(self, width: int) -> None:
        self.query_one("#fields").set_class(width >= TWO_COLUMNS_FROM, "two-col")

    # ------------------------------------------------------------------------------------------- load

    @work(thread=True, group="config", name="form-load")
    def load_form(self) -> None:
        values = FormValues()
        taken: set[str] = set()
        try:
            doc = ConfigDocument.load(self.capp.config_path)
            servers = doc.get(("mcp", "servers"), {}) or {}
            taken = {str(k) for k in servers}
            if self.server_id is not None:
                values = from_config(self.server_id, servers.get(self.server_id) or {})
            elif self.prefill is not None:
                values = self.prefill
        except (ConfigError, KeyError) as e:
            self.app.call_from_thread(self.notify, f"cannot read the config: {e}", severity="error")
        self.app.call_from_thread(self._fill, values, taken)

    def _fill(self, f: FormValues, taken: set[str]) -> None:
        self.taken = taken - ({self.server_id} if self.server_id else set())
        for name, _label in TEXT_FIELDS:
            self.query_one(f"#f-{name}", Input).value = str(getattr(f, name))
        self.query_one("#f-transport", Select).value = f.transport
        self.query_one("#f-start", Select).value = f.start
        for name, _label in SWITCHES:
            self.query_one(f"#f-{name}", Switch).value = bool(getattr(f, name))
        self.query_one("#f-tools", TextArea).text = f.tools
        for kv in f.env:
            self.query_one("#env-rows").mount(KVRow("env", kv.key, kv.value, kv.keyring))
        for kv in f.headers:
            self.query_one("#headers-rows").mount(KVRow("headers", kv.key, kv.value, kv.keyring))
        self._show_transport(f.transport)
        self.loaded = True
        self.query_one("#f-id", Input).focus()
        if self.intro:
            self._result(self.intro)
        self.call_after_refresh(self.guard.mark_clean)  # once the env/header rows above are mounted

    # ------------------------------------------------------------------------------------- validation

    def _show_transport(self, transport: str) -> None:
        for w in self.query(".field, .kv-block"):
            only = [c[5:] for c in w.classes if c.startswith("only-")]
            w.display = not only or transport in only

    def values(self) -> FormValues:
        f = FormValues()
        for name, _label in TEXT_FIELDS:
            setattr(f, name, self.query_one(f"#f-{name}", Input).value)
        f.transport = str(self.query_one("#f-transport", Select).value)
        f.start = str(self.query_one("#f-start", Select).value)
        for name, _label in SWITCHES:
            setattr(f, name, self.query_one(f"#f-{name}", Switch).value)
        f.tools = self.query_one("#f-tools", TextArea).text
        f.env = [KV(r.key, r.value, r.keyring) for r in self.query_one("#env-rows").query(KVRow)]
        f.headers = [KV(r.key, r.value, r.keyring) for r in self.query_one("#headers-rows").query(KVRow)]
        return f

    def _check(self, name: str, value: str) -> str:
        msg = check_field(
            name, value, base_dir=self.capp.engine.base_dir if self.capp.engine else None, taken=self.taken
        )
        self._message(name, msg)
        return msg

    def _message(self, name: str, msg: str) -> None:
        target = self.query_one(f"#msg-{name}", Static)
        target.update(msg)
        target.display = bool(msg)

    @on(Input.Changed)
    def _input_changed(self, event: Input.Changed) -> None:
        if not self.loaded:
            return
        wid = event.input.id or ""
        if wid.startswith("f-"):
            self._check(wid[2:], event.value)
        else:
            for row in self.query(KVRow):
                if event.input in row.query(Input):
                    row.set_message(check_kv(row.kind, row.key))

    @on(TextArea.Changed, "#f-tools")
    def _tools_changed(self, event: TextArea.Changed) -> None:
        if self.loaded:
            self._check("tools", event.text_area.text)

    @on(Select.Changed, "#f-transport")
    def _transport_changed(self, event: Select.Changed) -> None:
        self._show_transport(str(event.value))

    @on(Button.Pressed, "#do-test")
    def _test_pressed(self) -> None:
        self.action_test()

    @on(Button.Pressed, "#do-save")
    def _save_pressed(self) -> None:
        self.action_save()

    @on(Button.Pressed, "#do-cancel")
    def _cancel_pressed(self) -> None:
        self.action_cancel()

    @on(Button.Pressed, "#add-env")
    async def _add_env(self) -> None:
        row = KVRow("env", keyring=True)  # typed values go to the keyring unless unticked
        await self.query_one("#env-rows").mount(row)
        row.query_one(Input).focus()

    @on(Button.Pressed, "#add-header")
    async def _add_header(self) -> None:
        row = KVRow("headers", keyring=True)
        await self.query_one("#headers-rows").mount(row)
        row.query_one(Input).focus()

    @on(KVRow.Removed)
    def _remove_row(self, message: KVRow.Removed) -> None:
        message.row.remove()

    def validate_all(self) -> tuple[FormValues, dict[str, Any]] | None:
        """Check every visible field and the whole entry; None (messages shown) when something is wrong."""
        f = self.values()
        bad: list[Widget] = []
        for name, _label in (*TEXT_FIELDS, ("tools", "")):
            row = self.query_one(f"#row-{name}")
            value = f.tools if name == "tools" else str(getattr(f, name))
            if row.display and self._check(name, value):
                bad.append(row)
        block = "#env-rows" if f.transport == "stdio" else "#headers-rows"
        for r in self.query_one(block).query(KVRow):
            msg = check_kv(r.kind, r.key)
            r.set_message(msg)
            if msg:
                bad.append(r)
        if bad:
            self._result(f"✖ {len(bad)} field(s) need attention", error=True)
            self._go_to(bad)
            return None
        data = to_config(f)
        errors = model_errors(data)
        for name, msg in errors.items():
            if self.query(f"#msg-{name}"):
                self._message(name, msg)
                bad.append(self.query_one(f"#row-{name}"))
        if errors:
            self._result("✖ " + "; ".join(f"{k or 'server'}: {v}" for k, v in errors.items()), error=True)
            self._go_to(bad)
            return None
        return f, data

    def _go_to(self, rows: list[Widget]) -> None:
        """Scroll to the first row that needs attention (top of the screen first) and focus its input."""
        if not rows:
            return
        first = min(rows, key=lambda w: (w.region.y, w.region.x) if w.region.height else (1 << 30, 0))
        self.query_one("#form", VerticalScroll).scroll_to_widget(first, animate=False, top=True)
        focusable = [w for w in first.query("Input, Select, TextArea, Switch") if w.focusable]
        if focusable:
            focusable[0].focus(scroll_visible=False)

    def _result(self, text: str, *, error: bool = False) -> None:
        res = self.query_one("#form-result", Static)
        res.update(text)
        res.set_class(error, "error-text")

    # ------------------------------------------------------------------------------------------ actions

    def action_cancel(self) -> None:
        self.guard.leave()  # edited: save, discard or go back

    def _close(self) -> None:
        self.app.pop_screen()
        self.notify("closed the form; nothing was written", title="servers")

    def action_test(self) -> None:
        checked = self.validate_all()
        if checked is not None:
            self._result("testing…")
            self.run_test(checked[0])

    @work(group="form-test", name="form-test", exclusive=True, exit_on_error=False)
    async def run_test(self, f: FormValues) -> None:
        engine = self.capp.require_engine()
        if engine is None:
            return
        try:
            # expanded as the loader expands a saved entry: {python}, ${VAR}, ${keyring:NAME}
            data = await asyncio.to_thread(expand_entry, to_config(f), lookup_secret)
            report = await engine.test_server({"id": f.id.strip() or "test", **data})
        except ExpansionError as e:
            self._result(f"✖ test could not run: {e.message}", error=True)
            return
        except Exception as e:  # keyring trouble, a config the model refuses, a probe that raised
            self._result(f"✖ test could not run: {e}", error=True)
            return
        if report["ok"]:
            tools = ", ".join(t["exposed_name"] for t in report["tools"])
            timings = ", ".join(f"{k} {v} ms" for k, v in report["timings_ms"].items())
            self._result(f"✔ test passed ({report['protocol_version'] or '?'}; {timings})\ntools: {tools}")
        else:
            tail = "\n".join(report["stderr_tail"][-5:])
            self._result(f"✖ test failed: {report['error']}\n{tail}", error=True)

    def action_save(self) -> None:
        checked = self.validate_all()
        if checked is not None:
            self.prepare_save(checked[0])

    @work(thread=True, group="config", name="form-save")
    def prepare_save(self, f: FormValues) -> None:
        sid = f.id.strip()
        try:
            doc = ConfigDocument.load(self.capp.config_path)
            saved = doc.get(("mcp", "servers", self.server_id), None) if self.server_id is not None else None
            plan = plan_secrets(f, saved if isinstance(saved, dict) else {})
            if self.server_id is not None and self.server_id != sid:
                doc.remove_server(self.server_id)
            doc.set_server(sid, to_config(f, secret_refs=plan.refs))
        except (ConfigError, KeyError) as e:
            self.app.call_from_thread(self._result, f"✖ not saved: {e}", error=True)
            return
        self.app.call_from_thread(save_with_secrets, self, doc, f"Save server {sid}", plan, self._saved)

    def _saved(self, _settings: object) -> None:
        if self.is_current:
            self.app.pop_screen()
