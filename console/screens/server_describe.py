"""Describe one MCP server (issue 16 B.7): PID, uptime, command line, env keys (never their values), tool count and
the last errors with their times — what an operator asks first when a server misbehaves. A remote server with OAuth
also shows its sign-in: signed in or not, when the token expires, whether it refreshes (never a token).

Everything comes from ``engine.server_status()`` (redacted by the engine) and the server's config entry in the
running settings; env and header values are never read here, only their names. Reached with ``v`` on the Servers
screen; ``o`` opens its tool inspector; Esc goes back. Refreshed on every server event.
"""

from __future__ import annotations

import shlex
import time
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Header, Label, Static

from console.screens.base import ConsoleScreen
from console.state import Changes
from console.widgets.footer import KeyFooter


def uptime_text(seconds: float | None) -> str:
    """``2 h 03 min``, ``4 min 05 s``, ``12 s``; "-" when not up."""
    if seconds is None:
        return "-"
    s = int(seconds)
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60:02d} min"
    if s >= 60:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s} s"


def describe_rows(sid: str, snap: dict[str, Any], cfg: Any) -> list[tuple[str, str]]:
    """(label, value) lines for one server; ``snap`` is its status snapshot ({} when not running), ``cfg`` its
    config entry (None when gone). Never an env or header value."""
    transport = str(snap.get("transport") or (cfg.transport if cfg is not None else "-"))
    if transport == "stdio":
        words = snap.get("command") or (list(cfg.command) if cfg is not None else [])
        line = shlex.join(str(w) for w in words) or "-"
    elif transport in ("http", "sse"):
        line = str(snap.get("url") or (cfg.url if cfg is not None else "") or "-")
    else:
        args = snap.get("args") or (list(cfg.args or []) if cfg is not None else [])
        target = snap.get("target") or (cfg.target if cfg is not None else "-")
        line = " ".join([str(target), *(shlex.quote(str(a)) for a in args)])
    env_keys = snap.get("env_keys")
    if env_keys is None and cfg is not None:
        env_keys = sorted(cfg.env)
    header_keys = snap.get("header_keys")
    if header_keys is None and cfg is not None:
        header_keys = sorted(cfg.headers)
    version = " ".join(str(x) for x in (snap.get("server_name"), snap.get("server_version")) if x)
    rows = [
        ("state", str(snap.get("state") or "not running")),
        ("transport", transport),
        ("PID", str(snap.get("pid") or "-")),
        ("uptime", uptime_text(snap.get("uptime_s"))),
        ("command" if transport == "stdio" else "url" if transport in ("http", "sse") else "target", line),
        ("env keys", ", ".join(env_keys or []) or "(none)"),
    ]
    if header_keys:
        rows.append(("header keys", ", ".join(header_keys)))
    if snap.get("auth"):
        rows.append(("sign-in", oauth_text(snap["auth"])))
    rows += [
        ("protocol", str(snap.get("protocol_version") or "-")),
        ("server", version or "-"),
        ("tools", str(snap.get("tool_count", 0))),
        ("restarts", f"{snap.get('restarts', 0)} (total {snap.get('restarts_total', 0)})"),
        ("stderr", f"{snap.get('stderr_lines', 0)} line(s), {snap.get('stderr_suppressed', 0)} suppressed"),
    ]
    return rows


def oauth_text(auth: dict[str, Any], now: float | None = None) -> str:
    """An OAuth server's sign-in as the status has it (never a token): signed in or not, expiry, refresh."""
    if auth.get("signed_in") is None:
        return f"OAuth: {auth.get('error') or 'unknown'}"
    if not auth["signed_in"]:
        return "OAuth: not signed in (s on Servers, or ava-engine mcp login)"
    parts = ["OAuth: signed in"]
    expires = auth.get("expires_at")
    if isinstance(expires, int | float):
        left = expires - (time.time() if now is None else now)
        at = datetime.fromtimestamp(expires).strftime("%H:%M:%S")
        parts.append(f"token expires {at} (in {uptime_text(left)})" if left > 0 else f"token expired {at}")
    parts.append("refreshes by itself" if auth.get("can_refresh") else "no refresh token")
    if auth.get("scope"):
        parts.append(f"scope {auth['scope']}")
    return ", ".join(parts)


def error_lines(snap: dict[str, Any], now: float | None = None) -> list[str]:
    """The last errors, newest first, each with its local time and how long ago."""
    now = time.time() if now is None else now
    out = []
    for e in reversed(snap.get("errors") or []):
        at = float(e["at"])
        ago = uptime_text(max(0.0, now - at))
        out.append(f"{datetime.fromtimestamp(at).strftime('%H:%M:%S')} ({ago} ago)  {e['error']}")
    if not out and snap.get("last_error"):
        out.append(str(snap["last_error"]))
    return out


class ServerDescribe(ConsoleScreen):
    CSS_PATH = "server_describe.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("o", "tools", "Tools", id="describe_tools"),
        Binding("escape", "close", "Back", id="describe_close"),
    ]

    def __init__(self, server_id: str) -> None:
        super().__init__()
        self.server_id = server_id

    def compose(self) -> ComposeResult:
        yield Header()
        yield Label(f"Server {self.server_id}   (o: its tools · Esc back)", classes="section-title")
        with VerticalScroll(id="describe"):
            yield Static("", id="describe-facts")
            yield Label("Last errors", classes="section-title")
            yield Static("", id="describe-errors")
        yield KeyFooter()

    def on_mount(self) -> None:
        self.refresh_all()

    def apply_changes(self, changes: Changes) -> None:
        if changes.servers or changes.config_reloaded:
            self.refresh_all()

    def refresh_all(self) -> None:
        if not self.is_mounted:
            return
        engine = self.capp.engine
        snaps = engine.server_status()["servers"] if engine is not None else []
        snap: dict[str, Any] = next((s for s in snaps if s["id"] == self.server_id), {})
        settings = self.capp.settings
        cfg = settings.mcp.servers.get(self.server_id) if settings is not None else None
        facts = Text()
        for label, value in describe_rows(self.server_id, snap, cfg):
            facts.append(f"{label:<12} ", "bold")
            facts.append(f"{value}\n")
        facts.rstrip()
        self.query_one("#describe-facts", Static).update(facts)
        errors = error_lines(snap)
        self.query_one("#describe-errors", Static).update(
            Text("\n".join(errors), style="red") if errors else Text("(none)", style="dim")
        )

    def action_tools(self) -> None:
        from console.screens.tool_inspector import ToolInspector

        self.app.push_screen(ToolInspector(self.server_id))

    def action_close(self) -> None:
        self.app.pop_screen()
