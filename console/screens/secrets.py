"""Secrets: the names stored in the OS keyring for this app and where the config references them.

Set, replace and delete go through a masked input; values are never displayed. Keyring access runs in thread
workers (group "secrets"). When there is no usable keyring backend, the screen says so and how to get one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Header, Label, Static

from console.screens.base import ConsoleScreen
from console.screens.modals import ConfirmScreen, SecretEntry
from console.widgets.footer import KeyFooter
from console.widgets.keybar import KeyBar
from console.widgets.tables import ConsoleTable, cursor_key
from engine.config import secrets as keyring_secrets
from engine.config.loader import read_config_text


@dataclass(frozen=True)
class SecretsSnapshot:
    problem: str | None
    stored: list[str]
    refs: dict[str, list[str]]
    error: str | None = None


def read_snapshot(config_path: str) -> SecretsSnapshot:
    """Blocking: the keyring's names and the config's references (run in a thread)."""
    problem = keyring_secrets.backend_problem()
    refs: dict[str, list[str]] = {}
    error = None
    try:
        refs = keyring_secrets.references(read_config_text(config_path))
    except Exception as e:  # a config that does not parse: show the names anyway
        error = f"cannot read references from the config: {e}"
    stored: list[str] = []
    if problem is None:
        try:
            stored = keyring_secrets.list_secrets()
        except keyring_secrets.SecretsError as e:
            error = str(e)
    return SecretsSnapshot(problem, stored, refs, error)


class SecretsScreen(ConsoleScreen):
    CSS_PATH = "secrets.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "set_secret", "Set/replace", id="secret_set"),
        Binding("d", "delete_secret", "Delete", id="secret_delete"),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield Label("Secrets in the OS keyring (service ava-console) — values are never shown", classes="section-title")
        yield Static("", id="keyring-status")
        yield ConsoleTable(id="secrets", cursor_type="row", zebra_stripes=True)
        yield KeyBar(classes="keybar")
        yield KeyFooter()

    def on_mount(self) -> None:
        table = self.query_one("#secrets", DataTable)
        table.add_column("Name", key="name")
        table.add_column("Stored", key="stored")
        table.add_column("Referenced at", key="refs")
        table.focus()
        self.refresh_all()

    def refresh_all(self) -> None:
        if self.is_mounted:
            self.load(str(self.capp.config_path))

    @work(thread=True, group="secrets-read", name="secrets-read", exclusive=True)
    def load(self, config_path: str) -> None:
        snap = read_snapshot(config_path)
        self.app.call_from_thread(self._show, snap)

    def _show(self, snap: SecretsSnapshot) -> None:
        status = self.query_one("#keyring-status", Static)
        if snap.problem:
            status.update(Text(f"No OS keyring: {snap.problem}", style="bold yellow"))
        else:
            note = Text("keyring ready. a: set or replace · d: delete", style="green")
            if snap.error:
                note = Text(snap.error, style="red")
            status.update(note)
        table = self.query_one("#secrets", DataTable)
        table.clear()
        for name in sorted(set(snap.stored) | set(snap.refs)):
            stored = Text("✔ stored", style="green") if name in snap.stored else Text("✖ missing", style="red")
            if snap.problem:
                stored = Text("? no keyring", style="yellow")
            refs = ", ".join(snap.refs.get(name, [])) or "(not referenced)"
            table.add_row(name, stored, refs, key=name)

    def _selected(self) -> str:
        table = self.query_one("#secrets", DataTable)
        if table.row_count == 0:
            return ""
        return cursor_key(table) or ""

    def action_set_secret(self) -> None:
        def done(result: tuple[str, str] | None) -> None:
            if result is not None:
                self.store(*result)

        self.app.push_screen(SecretEntry(self._selected()), done)

    def action_delete_secret(self) -> None:
        name = self._selected()
        if not name:
            self.notify("no secret selected", title="secrets", severity="warning")
            return

        def done(yes: bool | None) -> None:
            if yes:
                self.delete(name)

        self.app.push_screen(
            ConfirmScreen(
                f"Delete secret {name!r} from the keyring?", "Config entries that reference it will fail to load."
            ),
            done,
        )

    @work(thread=True, group="secrets", name="secret-store")
    def store(self, name: str, value: str) -> None:
        try:
            keyring_secrets.set_secret(name, value)
        except keyring_secrets.SecretsError as e:
            self.app.call_from_thread(self.notify, str(e), title="secrets", severity="error")
            return
        self.app.call_from_thread(self.notify, f"stored {name!r} in the keyring", title="secrets")
        self.app.call_from_thread(self.refresh_all)

    @work(thread=True, group="secrets", name="secret-delete")
    def delete(self, name: str) -> None:
        try:
            existed = keyring_secrets.delete_secret(name)
        except keyring_secrets.SecretsError as e:
            self.app.call_from_thread(self.notify, str(e), title="secrets", severity="error")
            return
        msg = f"deleted {name!r}" if existed else f"{name!r} was not stored"
        self.app.call_from_thread(self.notify, msg, title="secrets")
        self.app.call_from_thread(self.refresh_all)
