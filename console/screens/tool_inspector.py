"""Tool inspector (issue 16 B.6): one MCP server's tools — each one's input schema and annotations — and a "call
this tool" form generated from the schema, validated before the call; the result shown as the model gets it
(status, message, data) and as the caller would hear it (the engine's speakable message).

The call goes through ``engine.call_tool``, the path ``ava-engine mcp call`` takes (allowlist, argument validation
against the full schema, timeout, result shaping, events): the operator is shown every tool. Reached with ``o`` on
the Servers screen; Esc goes back.
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widget import Widget
from textual.widgets import Button, DataTable, Header, Label, Static

from console.screens.base import ConsoleScreen
from console.state import Changes
from console.tool_form import FieldSpec, collect, fields_for
from console.widgets.footer import KeyFooter
from console.widgets.schema_form import field_row, field_texts
from console.widgets.tables import cursor_key
from engine import UnknownTool, call_tool, tool_catalog

#: Annotations worth a word in the table (MCP tool annotations; titles and the rest are in the detail).
HINTS = {"readOnlyHint": "read-only", "destructiveHint": "destructive", "idempotentHint": "idempotent"}


def annotation_words(annotations: dict[str, Any]) -> str:
    words = [w for k, w in HINTS.items() if annotations.get(k) is True]
    if annotations.get("openWorldHint") is True:
        words.append("open-world")
    return ", ".join(words) or "-"


class ToolInspector(ConsoleScreen):
    CSS_PATH = "tool_inspector.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+t", "call", "Call tool", id="inspector_call", priority=True),
        Binding("escape", "close", "Back", id="inspector_close"),
    ]

    def __init__(self, server_id: str) -> None:
        super().__init__()
        self.server_id = server_id
        self.tools: dict[str, dict[str, Any]] = {}
        self.specs: list[FieldSpec] = []
        self.current: str | None = None

    def compose(self) -> ComposeResult:
        yield Header()
        yield Label(f"Tools of {self.server_id}   (Ctrl+T calls the selected tool · Esc back)", classes="section-title")
        with Horizontal(id="inspector"):
            yield DataTable(id="tool-list", cursor_type="row", zebra_stripes=True)
            with VerticalScroll(id="tool-detail"):
                yield Static("", id="tool-about")
                with Vertical(id="call-section"):
                    yield Label("Call this tool", classes="section-title")
                    yield Vertical(id="call-fields")
                    with Horizontal(id="call-actions"):
                        yield Button("Call ^T", id="do-call", variant="primary")
                        yield Static("", id="call-status")
                    yield Label("The caller hears", classes="section-title")
                    yield Static("-", id="call-spoken")
                    yield Label("The model gets", classes="section-title")
                    yield Static("-", id="call-model")
                    yield Label("Input schema and annotations", classes="section-title")
                    yield Static("", id="tool-schema")
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one("#tool-list", DataTable)
        table.add_column("Tool", key="tool")
        table.add_column("Hints", key="hints")
        table.focus()
        self.refresh_all()

    def apply_changes(self, changes: Changes) -> None:
        if changes.servers or changes.config_reloaded:  # a restart or reload can change the tool list
            self.refresh_all()

    def refresh_all(self) -> None:
        engine = self.capp.engine
        if not self.is_mounted:
            return
        about = self.query_one("#tool-about", Static)
        if engine is None:
            about.update(self.capp.engine_error or "engine starting…")
            return
        catalog = tool_catalog(engine, self.server_id)
        same = [t["exposed_name"] for t in catalog] == list(self.tools)
        self.tools = {t["exposed_name"]: t for t in catalog}
        if same and catalog:
            return  # nothing to redraw: the form keeps what the operator typed
        table = self.query_one("#tool-list", DataTable)
        keep = cursor_key(table) if table.row_count else None
        table.clear()
        for t in catalog:
            table.add_row(t["exposed_name"], annotation_words(t["annotations"]), key=t["exposed_name"])
        self.query_one("#call-section").display = bool(catalog)
        if not catalog:
            about.update(Text(f"{self.server_id} has no tools registered (is it up? see the Servers screen)", "yellow"))
            return
        if keep in self.tools:
            table.move_cursor(row=table.get_row_index(keep))
        self._show(cursor_key(table))

    @on(DataTable.RowHighlighted, "#tool-list")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.row_key is not None and event.row_key.value is not None:
            self._show(event.row_key.value)

    def _show(self, name: str | None) -> None:
        if name is None or name == self.current or name not in self.tools:
            return
        self.current = name
        tool = self.tools[name]
        about = Text()
        about.append(f"{name}", "bold")
        about.append(f" — {tool['name']} on {tool['server']}\n")
        about.append(str(tool["description"] or "(no description)"))
        if tool["timeout_ms"]:
            about.append(f"\ntimeout {tool['timeout_ms']} ms", "dim")
        self.query_one("#tool-about", Static).update(about)
        schema = {"input_schema": tool["input_schema"], "annotations": tool["annotations"]}
        self.query_one("#tool-schema", Static).update(Text(json.dumps(schema, indent=2, ensure_ascii=False)))
        self.specs = fields_for(tool["input_schema"])
        box = self.query_one("#call-fields", Vertical)
        box.remove_children()
        box.mount_all([self._field(spec) for spec in self.specs] or [Static("(no arguments)", classes="muted")])
        for sel in ("#call-status", "#call-spoken", "#call-model"):
            self.query_one(sel, Static).update("-" if sel != "#call-status" else "")

    def _field(self, spec: FieldSpec) -> Widget:
        return field_row(spec)

    def _texts(self) -> dict[str, str]:
        return field_texts(self, self.specs)

    @on(Button.Pressed, "#do-call")
    def _call_pressed(self) -> None:
        self.action_call()

    def action_call(self) -> None:
        if self.current is None:
            self.notify("no tool selected", title="tools", severity="warning")
            return
        args, problems = collect(self.specs, self._texts())
        for spec in self.specs:
            msg = self.query_one(f"#argmsg-{spec.name}", Static)
            msg.update(problems.get(spec.name, ""))
            msg.display = spec.name in problems
        status = self.query_one("#call-status", Static)
        if problems:
            status.update(Text(f"✖ {len(problems)} argument(s) need attention: not called", "red"))
            first = next(s.name for s in self.specs if s.name in problems)
            self.query_one(f"#arg-{first}").focus()
            return
        status.update(f"calling {self.current}…")
        self.run_call(self.current, args)

    @work(group="inspector", name="inspector-call", exclusive=True, exit_on_error=False)
    async def run_call(self, name: str, args: dict[str, Any]) -> None:
        engine = self.capp.require_engine()
        if engine is None:
            return
        status = self.query_one("#call-status", Static)
        try:
            result = await call_tool(engine, name, args, approved_by="operator (console tool inspector)")
        except UnknownTool as e:
            status.update(Text(f"✖ {e}", "red"))
            return
        except Exception as e:  # a server that vanished mid-call: say so on screen
            status.update(Text(f"✖ the call failed: {type(e).__name__}: {e}", "red"))
            return
        if name != self.current:
            return
        self.query_one("#tool-detail", VerticalScroll).scroll_to_widget(status, animate=False, top=True)
        style = "green" if result.status == "success" else "red"
        status.update(Text(f"{'✔' if result.status == 'success' else '✖'} {result.status}", style))
        self.query_one("#call-spoken", Static).update(Text(f"“{result.message}”"))
        shown = json.dumps(result.to_dict(), indent=2, ensure_ascii=False, default=str)
        self.query_one("#call-model", Static).update(Text(shown))

    def action_close(self) -> None:
        self.app.pop_screen()
