"""Removing an MCP server from the config, and what only it left in the keyring (issue 34 item 10).

Why it exists: a server's env and header values live in the keyring as ``${keyring:NAME}``, and a remote server's
OAuth tokens and client registration under its id; removing the server left them there, unused and forgotten. After
the removal is saved, the operator is asked whether to delete the secrets no other part of the config references
(stored ones only; a secret another entry still uses is never offered) and the sign-in stored under the server's id
(asked, not done: another config on this machine may name a server the same). Kept apart from the Servers screen,
which owns the table, not this flow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from console.config_flow import save_document
from console.screens.modals import ConfirmScreen

if TYPE_CHECKING:
    from console.console_port import Console


def remove_server(app: Console, sid: str) -> None:
    """Ask, then remove ``sid`` through the diff-and-save flow; then offer to delete the secrets only it used."""

    def answered(yes: bool | None) -> None:
        if yes:
            app.run_worker(lambda: _prepare(app, sid), thread=True, group="config", name="server-remove")

    app.push_screen(
        ConfirmScreen(f"Remove server {sid!r} from the config?", "You will see the diff before anything is written."),
        answered,
    )


def _prepare(app: Console, sid: str) -> None:
    """Blocking (a thread): the config without ``sid``, the stored secrets only its entry references, and whether
    the keyring holds an OAuth sign-in under its id."""
    from engine import oauth_sign_in_stored
    from engine.config import ConfigDocument, ConfigError
    from engine.config.secrets import SecretsError, keyring_state, list_secrets, owned_secrets

    try:
        doc = ConfigDocument.load(app.config_path)
        owned = owned_secrets(doc.data, sid)  # read before the entry goes
        doc.remove_server(sid)
    except (ConfigError, KeyError) as e:
        app.call_from_thread(app.notify, str(e), title="servers", severity="error")
        return
    try:
        stored = set(list_secrets()) if owned else set()
        signed_in = oauth_sign_in_stored(sid)  # any server id may have one: a server whose auth was taken out too
    except SecretsError:  # no usable keyring: nothing in it to offer
        stored, signed_in = set(), False
    leftovers = Leftovers(sid, [n for n in owned if n in stored], signed_in, keyring_state().where)

    def saved(_settings: Any) -> None:
        if leftovers:
            _offer(app, leftovers)

    app.call_from_thread(save_document, app, doc, f"Remove server {sid}", saved)


@dataclass(frozen=True)
class Leftovers:
    """What removing server ``sid`` left in the keyring."""

    sid: str
    #: Named secrets no other part of the config references.
    names: list[str]
    #: An OAuth sign-in (tokens, client registration) under the server's id.
    sign_in: bool
    #: ``keyring_state().where``: "the OS keyring" or "the UNENCRYPTED file keyring (PATH)".
    where: str

    def __bool__(self) -> bool:
        return bool(self.names) or self.sign_in

    @property
    def listed(self) -> str:
        return ", ".join([*self.names, *([f"{self.sid}'s OAuth sign-in"] * self.sign_in)])

    @property
    def them(self) -> str:
        return "it" if len(self.names) + self.sign_in == 1 else "them"


def _offer(app: Console, left: Leftovers) -> None:
    def answered(yes: bool | None) -> None:
        if yes:
            app.run_worker(lambda: _delete(app, left), thread=True, group="secrets", name="server-secrets-delete")
        else:
            how = " (the Secrets screen deletes named secrets)" if left.names else ""
            app.notify(f"kept in {left.where}: {left.listed}{how}", title="secrets")

    why = [f"{'It is' if left.them == 'it' else 'They are'} in {left.where}."]
    if left.names:
        them = "it" if len(left.names) == 1 else "them"
        why.append(f"Server {left.sid} was the only part of the config that used {them}.")
    if left.sign_in:
        why.append(
            f"The sign-in (tokens, client registration) would serve a server added as {left.sid} again, "
            f"or another config's {left.sid}."
        )
    app.push_screen(
        ConfirmScreen(f"Also delete {left.listed}?", " ".join([*why, "y: delete · n: keep"])),
        answered,
    )


def _delete(app: Console, left: Leftovers) -> None:
    from engine import forget_oauth_sign_in
    from engine.config.secrets import SecretsError, delete_secret

    try:
        for name in left.names:
            delete_secret(name)
        if left.sign_in:
            forget_oauth_sign_in(left.sid)
    except SecretsError as e:
        app.call_from_thread(app.notify, str(e), title="secrets", severity="error")
        return
    app.call_from_thread(app.notify, f"deleted from {left.where}: {left.listed}", title="secrets")
