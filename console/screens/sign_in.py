"""The Sign in dialog of the Servers screen: OAuth sign-in to a remote MCP server without leaving the console.

Why it exists: a remote server whose token is missing or expired waits in ``needs sign-in``; the operator signs in
from here. The engine (``Engine.sign_in_server``) discovers the authorization server, listens for the redirect on
127.0.0.1 and hands over the URL, which this dialog shows (selectable, and opened in a browser when one can be
shown); once the browser comes back the tokens are in the keyring and the server restarts, ``up``. The dialog says
which keyring, in the engine's words (a plain-file one is named UNENCRYPTED, as ``mcp login`` warns). Closing the
dialog cancels a sign-in still waiting. No token ever reaches the console: the engine returns only a report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import parse_qs, urlsplit

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static

from console.crash_guard import ContainErrors
from console.widgets.keyring_where import KeyringWhere

if TYPE_CHECKING:
    from console.console_port import Console


class SignInScreen(ContainErrors, ModalScreen[bool]):
    """Shows the authorization URL and the sign-in's progress; dismissed with True once signed in."""

    CSS_PATH = "sign_in.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Close", id="signin_close"),
    ]

    def __init__(self, server_id: str) -> None:
        super().__init__()
        self.server_id = server_id
        self.url: str | None = None
        self.signed_in = False
        self.report: dict[str, Any] | None = None

    @property
    def capp(self) -> Console:
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        with Vertical(id="signin-box"):
            yield Label(f"Sign in to {self.server_id}", classes="section-title")
            yield Static("Finding the server's authorization server…", id="signin-status")
            yield Static("", id="signin-url", markup=False)
            yield KeyringWhere("The tokens go to {where}.", id="signin-where")
            with Horizontal(classes="buttons"):
                yield Button("Close (Esc)", id="signin-close")

    def on_mount(self) -> None:
        self.query_one("#signin-url", Static).display = False
        self.sign_in()

    def _status(self, text: str | Text) -> None:
        self.query_one("#signin-status", Static).update(text)

    async def _show(self, url: str) -> None:
        from engine import open_in_browser

        self.url = url
        box = self.query_one("#signin-url", Static)
        box.update(url)
        box.display = True
        opened = open_in_browser(url)
        scopes = " ".join(parse_qs(urlsplit(url).query).get("scope", []))
        self._status(
            ("A browser was opened. " if opened else "Open this URL in a browser. ")
            + (f"It asks for scopes: {scopes}. " if scopes else "")
            + "Waiting for the authorization server to send it back here (127.0.0.1)…"
        )

    @work(group="signin", exclusive=True, exit_on_error=False)
    async def sign_in(self) -> None:
        engine = self.capp.require_engine()
        if engine is None:
            self._status(Text("The engine is not running.", style="red"))
            return
        try:
            report = await engine.sign_in_server(self.server_id, self._show)
        except Exception as e:  # SignInError and an unknown server alike: the message names the server
            self._status(Text(str(e), style="bold red"))
            return
        self.signed_in, self.report = True, report
        tools = report.get("tools") or []
        self._status(
            Text(f"Signed in. {self.server_id} is {report.get('state')} with {len(tools)} tool(s).", style="green")
        )
        self.query_one("#signin-url", Static).display = False
        self.notify(f"{self.server_id}: signed in", title="servers")

    def action_close(self) -> None:
        self.workers.cancel_group(self, "signin")
        self.dismiss(self.signed_in)

    @on(Button.Pressed, "#signin-close")
    def _close(self) -> None:
        self.action_close()
