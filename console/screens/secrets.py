"""Secrets: the names stored in the OS keyring for this app and where the config references them.

Add, replace, rename and delete; values go through a masked input and are never displayed. Adding never replaces a
stored secret without asking (issue 16 A4: ``a`` with a row selected used to overwrite it); replacing the selected
secret's value (``e``) and renaming it (``r``) are their own keys. Keyring access runs in thread workers (group
"secrets"). When there is no usable keyring backend, the screen says so and how to get one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Header, Label, Static

from console.screens.base import ConsoleScreen
from console.screens.modals import ConfirmScreen, NameEntry, SecretEntry
from console.widgets.footer import KeyFooter
from console.widgets.keybar import KeyBar
from console.widgets.tables import ConsoleTable, cursor_key
from engine.config import references
from engine.config import secrets as keyring_secrets
from engine.config.loader import read_config_text


@dataclass(frozen=True)
class SecretsSnapshot:
    problem: str | None
    stored: list[str]
    refs: dict[str, list[str]]
    error: str | None = None
    #: Set when the keyring in use keeps secrets unencrypted (a plaintext file): what to do about it.
    unencrypted: str | None = None


def read_snapshot(config_path: str) -> SecretsSnapshot:
    """Blocking: the keyring's names and the config's references (run in a thread)."""
    state = keyring_secrets.keyring_state()  # the engine's words for it: never "ready" for a plain file
    problem = state.problem
    refs: dict[str, list[str]] = {}
    error = None
    try:
        refs = references(read_config_text(config_path))
    except Exception as e:  # a config that does not parse: show the names anyway
        error = f"cannot read references from the config: {e}"
    stored: list[str] = []
    if problem is None:
        try:
            stored = keyring_secrets.list_secrets()
        except keyring_secrets.SecretsError as e:
            error = str(e)
    return SecretsSnapshot(problem, stored, refs, error, state.status if state.unencrypted else None)


class SecretsScreen(ConsoleScreen):
    CSS_PATH = "secrets.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "set_secret", "Add", id="secret_set"),
        Binding("e", "replace_secret", "Replace value", id="secret_replace"),
        Binding("r", "rename_secret", "Rename", id="secret_rename"),
        Binding("d", "delete_secret", "Delete", id="secret_delete"),
    ]
    #: Attached to engines elsewhere (``--attach``) these keys say they need this console's own engine.
    LOCAL_ONLY: ClassVar[dict[str, str]] = {
        "set_secret": "secrets (each engine's keyring)",
        "replace_secret": "secrets (each engine's keyring)",
        "rename_secret": "secrets (each engine's keyring)",
        "delete_secret": "secrets (each engine's keyring)",
    }

    def __init__(self) -> None:
        super().__init__()
        self.stored: set[str] = set()
        self.refs: dict[str, list[str]] = {}

    def compose(self) -> ComposeResult:
        yield Header()
        yield Label("Secrets in the OS keyring (service ava-console) — values are never shown", classes="section-title")
        yield Static("", id="keyring-status")
        yield ConsoleTable(id="secrets", cursor_type="row", zebra_stripes=True, flex="refs")
        yield Static("", id="secret-refs", classes="muted")  # the highlighted secret's references, whole
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
            note = Text("keyring ready. a: add · e: replace value · r: rename · d: delete", style="green")
            if snap.unencrypted:
                note = Text(f"{snap.unencrypted} a: add · e: replace · r: rename · d: delete", style="bold yellow")
            if snap.error:
                note = Text(snap.error, style="red")
            status.update(note)
        self.stored, self.refs = set(snap.stored), dict(snap.refs)
        table = self.query_one("#secrets", DataTable)
        table.clear()
        for name in sorted(set(snap.stored) | set(snap.refs)):
            stored = Text("✔ stored", style="green") if name in snap.stored else Text("✖ missing", style="red")
            if snap.problem:
                stored = Text("? no keyring", style="yellow")
            refs = ", ".join(snap.refs.get(name, [])) or "(not referenced)"
            table.add_row(name, stored, refs, key=name)
        self._show_refs(self._selected() or None)

    @on(DataTable.RowHighlighted, "#secrets")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_refs(event.row_key.value)

    def _show_refs(self, name: str | None) -> None:
        """Where the config references the highlighted secret, whole (its "Referenced at" cell may end in "…")."""
        where = self.refs.get(name or "")
        text = f"{name} is referenced at: {', '.join(where)}" if where else f"{name} is not referenced in the config"
        self.query_one("#secret-refs", Static).update(Text(text) if name else "")

    def _selected(self) -> str:
        table = self.query_one("#secrets", DataTable)
        if table.row_count == 0:
            return ""
        return cursor_key(table) or ""

    def action_set_secret(self) -> None:
        """Add a secret: an empty entry; a name already stored is replaced only after a yes."""
        self.app.push_screen(SecretEntry(""), self._entered)

    def action_replace_secret(self) -> None:
        name = self._selected()
        if not name:
            self.notify("no secret selected (a: add one)", title="secrets", severity="warning")
            return
        self.app.push_screen(SecretEntry(name, title=f"Replace the value of {name}"), lambda r: self._entered(r, name))

    def _entered(self, result: tuple[str, str] | None, replacing: str = "") -> None:
        if result is None:
            return
        name, value = result
        if name not in self.stored or name == replacing:
            self.store(name, value)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self.store(name, value)
            else:
                self.notify(f"{name!r} kept its stored value", title="secrets")

        self.app.push_screen(
            ConfirmScreen(f"Replace the stored secret {name!r}?", "A secret of that name exists; its value is lost."),
            answered,
        )

    def action_rename_secret(self) -> None:
        old = self._selected()
        if not old or old not in self.stored:
            self.notify("select a stored secret to rename", title="secrets", severity="warning")
            return

        def named(new: str | None) -> None:
            if not new or new == old:
                return
            if new not in self.stored:
                self.rename(old, new, False)
                return

            def answered(yes: bool | None) -> None:
                if yes:
                    self.rename(old, new, True)

            self.app.push_screen(
                ConfirmScreen(f"Rename {old!r} to {new!r}, replacing the stored {new!r}?", "Its value is lost."),
                answered,
            )

        self.app.push_screen(NameEntry(f"Rename secret {old}", old, "NEW_NAME (letters, digits, _ . -)"), named)

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
        where = keyring_secrets.keyring_state().where
        self.app.call_from_thread(self.notify, f"stored {name!r} in {where}", title="secrets")
        self.app.call_from_thread(self.refresh_all)

    @work(thread=True, group="secrets", name="secret-rename")
    def rename(self, old: str, new: str, replace: bool) -> None:
        try:
            keyring_secrets.rename_secret(old, new, replace=replace)
        except keyring_secrets.SecretsError as e:
            self.app.call_from_thread(self.notify, str(e), title="secrets", severity="error")
            return
        msg = f"renamed {old!r} to {new!r}"
        if where := self.refs.get(old):
            msg += f"; the config still says ${{keyring:{old}}} at {', '.join(where)}: edit it"
        self.app.call_from_thread(self.notify, msg, title="secrets", timeout=10)
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
