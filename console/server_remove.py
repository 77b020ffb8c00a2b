"""Removing an MCP server from the config, and the keyring secrets only it used (issue 34 item 10).

Why it exists: a server's env and header values live in the keyring as ``${keyring:NAME}``; removing the server left
them there, unused and forgotten. After the removal is saved, the operator is asked whether to delete the secrets no
other part of the config references (stored ones only; a secret another entry still uses is never offered). Kept
apart from the Servers screen, which owns the table, not this flow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from console.config_flow import save_document
from console.screens.modals import ConfirmScreen

if TYPE_CHECKING:
    from console.app import AvaConsole


def remove_server(app: AvaConsole, sid: str) -> None:
    """Ask, then remove ``sid`` through the diff-and-save flow; then offer to delete the secrets only it used."""

    def answered(yes: bool | None) -> None:
        if yes:
            app.run_worker(lambda: _prepare(app, sid), thread=True, group="config", name="server-remove")

    app.push_screen(
        ConfirmScreen(f"Remove server {sid!r} from the config?", "You will see the diff before anything is written."),
        answered,
    )


def _prepare(app: AvaConsole, sid: str) -> None:
    """Blocking (a thread): the config without ``sid``, and the stored secrets only its entry references."""
    from engine.config import ConfigDocument, ConfigError
    from engine.config.secrets import SecretsError, list_secrets, owned_secrets

    try:
        doc = ConfigDocument.load(app.config_path)
        owned = owned_secrets(doc.data, sid)  # read before the entry goes
        doc.remove_server(sid)
    except (ConfigError, KeyError) as e:
        app.call_from_thread(app.notify, str(e), title="servers", severity="error")
        return
    try:
        stored = set(list_secrets()) if owned else set()
    except SecretsError:  # no usable keyring: nothing in it to offer
        stored = set()
    names = [n for n in owned if n in stored]

    def saved(_settings: Any) -> None:
        if names:
            _offer(app, sid, names)

    app.call_from_thread(save_document, app, doc, f"Remove server {sid}", saved)


def _offer(app: AvaConsole, sid: str, names: list[str]) -> None:
    listed = ", ".join(names)
    them = "it" if len(names) == 1 else "them"

    def answered(yes: bool | None) -> None:
        if yes:
            app.run_worker(lambda: _delete(app, names), thread=True, group="secrets", name="server-secrets-delete")
        else:
            app.notify(f"kept in the keyring: {listed} (the Secrets screen deletes {them})", title="secrets")

    app.push_screen(
        ConfirmScreen(
            f"Also delete {listed} from the keyring?",
            f"Server {sid} was the only part of the config that used {them}. y: delete · n: keep",
        ),
        answered,
    )


def _delete(app: AvaConsole, names: list[str]) -> None:
    from engine.config.secrets import SecretsError, delete_secret, keyring_state

    try:
        for name in names:
            delete_secret(name)
    except SecretsError as e:
        app.call_from_thread(app.notify, str(e), title="secrets", severity="error")
        return
    where = keyring_state().where
    app.call_from_thread(app.notify, f"deleted from {where}: {', '.join(names)}", title="secrets")
