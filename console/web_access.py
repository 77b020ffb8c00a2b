"""What ``ava-console --web`` admits: its options, the access token, the names and origins it serves.

Why it exists: the rules are settled (and a wrong option refused with the reason) before anything is served, and
without loading the web server: ``console.app`` builds its parser from here at every start. ``console.web_serve``
applies them to every request.
"""

from __future__ import annotations

import argparse
import hmac
import os
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from urllib.parse import urlsplit

#: Served without the token: the page's own scripts, styles and fonts (textual-serve's package files).
PUBLIC_PREFIX = "/static/"
#: A token given in ``$AVA_CONSOLE_WEB_TOKEN`` must be at least this long (a stable URL behind a proxy).
MIN_TOKEN_CHARS = 24
WILDCARD_BINDS = frozenset({"", "0.0.0.0", "::", "[::]"})
#: The environment variable that fixes the token (a stable URL, e.g. behind a proxy); a new one each start otherwise.
TOKEN_ENV = "AVA_CONSOLE_WEB_TOKEN"


@dataclass(frozen=True)
class WebAccess:
    """Who may use the browser console: where it listens, the URL browsers use, the names and origins admitted."""

    host: str
    port: int
    token: str
    public_url: str
    allowed_hosts: Sequence[str] = field(default_factory=tuple)
    allowed_origins: Sequence[str] = field(default_factory=tuple)

    @property
    def cookie_name(self) -> str:
        # Cookies are not kept apart by port: two consoles on one machine must not overwrite each other's.
        return f"ava_console_token_{self.port}"

    @property
    def url(self) -> str:
        """The address to open, token included (printed at start)."""
        return f"{self.public_url.rstrip('/')}/?token={self.token}"

    def same_machine_redirect(self, host: str) -> str | None:
        """The printed URL, when a page was opened on this machine under another loopback name (localhost for
        127.0.0.1): the page's WebSocket goes to the public URL, so the page must be served from it too."""
        from engine.config.models.engine import is_loopback_host  # not at import: the console's first frame

        public = urlsplit(self.public_url)
        if public.hostname is None or not is_loopback_host(public.hostname) or host.lower() == public.netloc.lower():
            return None
        return self.url

    def token_ok(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token.encode())


def web_access(
    host: str,
    port: int,
    public_url: str | None = None,
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
    token: str | None = None,
) -> WebAccess:
    """Check ``--web``'s options and make the access rules; ``ValueError`` says which option is wrong and why."""
    if not 1 <= port <= 65535:
        raise ValueError(f"--port {port}: --web needs a port from 1 to 65535")
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise ValueError(f"${TOKEN_ENV} is {len(token)} characters; a token for --web needs at least {MIN_TOKEN_CHARS}")
    hosts, origins = list(allow_hosts), list(allow_origins)
    if public_url is None:
        if host.strip() in WILDCARD_BINDS:
            raise ValueError(
                f"--host {host or repr(host)} listens on every address: also give --public-url "
                "(the address browsers open, e.g. https://ava.example) so the page knows where to connect"
            )
        name = f"[{host}]" if ":" in host and not host.startswith("[") else host
        public_url = f"http://{name}:{port}"
    else:
        parts = urlsplit(public_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"--public-url {public_url!r}: give an http:// or https:// URL with a host name")
        if parts.path not in ("", "/"):
            raise ValueError(f"--public-url {public_url!r}: the console is served at the root; give no path")
        hosts.append(parts.netloc)
        origins.append(f"{parts.scheme}://{parts.netloc}")
        public_url = f"{parts.scheme}://{parts.netloc}"
    return WebAccess(host, port, token or secrets.token_urlsafe(32), public_url, tuple(hosts), tuple(origins))


def add_web_arguments(p: argparse.ArgumentParser) -> None:
    """``--web`` and the options that say who may reach it."""
    p.add_argument(
        "--web",
        action="store_true",
        help="serve the console in a browser (127.0.0.1 by default; open the URL it prints, token included)",
    )
    p.add_argument("--port", type=int, default=8000, help="port for --web (default 8000)")
    p.add_argument(
        "--host", default="127.0.0.1", help="address --web listens on (default 127.0.0.1: this machine only)"
    )
    p.add_argument(
        "--public-url",
        metavar="URL",
        help="for --web behind a proxy: the URL browsers open (https://ava.example); its host and origin are admitted",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="for --web: a further Host name to serve (repeatable; 'name' or 'name:port')",
    )
    p.add_argument(
        "--allow-origin",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="for --web: a further page origin admitted (repeatable; 'https://ui.example')",
    )


def access_from_args(args: argparse.Namespace) -> WebAccess:
    """The access rules ``--web``'s options (and ``$AVA_CONSOLE_WEB_TOKEN``) ask for; ``ValueError`` when wrong."""
    token = os.environ.get(TOKEN_ENV) or None
    return web_access(args.host, args.port, args.public_url, args.allow_host, args.allow_origin, token)
