"""Ask where a new MCP server comes from: a registry server.json file, ``npm:PKG``, ``pypi:PKG``, a package name or
a URL. The Servers screen reads it with the same ``plan_add`` as ``ava-engine mcp add`` and opens the server form
filled with the result, where the operator reviews it, fills what the source needs, tests and saves.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from console.crash_guard import ContainErrors
from console.screens.leave_form import FormGuard
from console.server_model import KV, FormValues, from_config
from console.widgets.keyring_where import KeyringWhere
from engine.config import looks_like_secret
from engine.config.mcp_add import finalise

if TYPE_CHECKING:
    from console.screens.base import ConsoleScreen
    from engine.config.mcp_add import AddPlan

HINT = (
    "A registry server.json file · npm:@scope/pkg[@1.2.3] · pypi:pkg[==1.2.3] · a package name · https://…/mcp\n"
    "Enter opens the server form filled from it: review, fill what it needs, Test, Save (diff first).\n"
    "Secret env and header values go to {where}."
)


class AddSourceScreen(ContainErrors, ModalScreen[str | None]):
    """Dismisses with the source text, or None."""

    CSS_PATH = "add_source.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel", id="add_source_cancel")]

    def __init__(self) -> None:
        super().__init__()
        self.guard = FormGuard(self, save=self._done, close=lambda: self.dismiss(None), save_label="Open")

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Add an MCP server from the registry or a package", classes="section-title")
            yield Input(placeholder="server.json path, npm:PKG, pypi:PKG, a name or a URL", id="add-source")
            yield KeyringWhere(HINT, classes="muted")

    def on_mount(self) -> None:
        self.query_one("#add-source", Input).focus()
        self.guard.mark_clean()

    @on(Input.Submitted, "#add-source")
    def _done(self) -> None:
        self.dismiss(self.query_one("#add-source", Input).value.strip() or None)

    def action_cancel(self) -> None:
        self.guard.leave()


def form_from_plan(plan: AddPlan, taken: set[str]) -> tuple[FormValues, str]:
    """The server form's values for ``plan`` (a free id; secret rows ticked "store in keyring"; empty rows for the
    values the source needs) and the line shown above the form."""
    sid, n = plan.suggested_id, 2
    while sid in taken:
        sid, n = f"{plan.suggested_id[:28]}_{n}", n + 1
    # secret arguments become keyring references (the form stores only env/header rows: say so below)
    entry, arg_secrets = finalise(sid, plan.entry, plan, plan.secret_keys, move=False)
    f = from_config(sid, entry)
    kind = "env" if f.transport == "stdio" else "headers"
    rows: list[KV] = getattr(f, kind)
    for kv in rows:
        kv.keyring = kv.keyring or f"{kind}:{kv.key}" in plan.secret_keys or looks_like_secret(kv.key, kv.value)
    rows += [KV(n.name, "", True) for n in plan.needed if n.kind == kind]
    intro = []  # what to do first: the box shows its first lines at 80×24
    if plan.needed:
        intro.append("fill in: " + ", ".join(f"{n.name}{' (secret)' if n.secret else ''}" for n in plan.needed))
    if arg_secrets:
        intro.append(f"store {', '.join(arg_secrets)} with Secrets (F9) before testing: the command refers to them")
    intro += [f"from {plan.source}", *plan.notes]
    return f, "\n".join(intro)


def start_add_from_source(screen: ConsoleScreen) -> None:
    """Ask for the source, then (in a worker thread) read it and open the server form filled with it."""

    def answered(source: str | None) -> None:
        if source:
            screen.run_worker(partial(_open_form, screen, source), thread=True, group="config", name="server-add-src")

    screen.app.push_screen(AddSourceScreen(), answered)


def _open_form(screen: ConsoleScreen, source: str) -> None:
    """Read the source as ``ava-engine mcp add`` does; open the server form with it (nothing is saved here)."""
    from console.screens.server_form import ServerForm
    from engine.config import ConfigDocument, ConfigError
    from engine.config.mcp_add import McpAddError, plan_add

    app = screen.app
    try:
        plan = plan_add(source)
        doc = ConfigDocument.load(screen.capp.config_path)
        taken = {str(k) for k in (doc.get(("mcp", "servers"), None) or {})}
    except (McpAddError, ConfigError) as e:
        app.call_from_thread(screen.notify, str(e), title="add from registry", severity="error", timeout=15)
        return
    values, intro = form_from_plan(plan, taken)
    app.call_from_thread(app.push_screen, ServerForm(None, prefill=values, intro=intro))
