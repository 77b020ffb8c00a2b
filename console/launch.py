"""How ``ava-console`` starts: the HTTP API is opt-in, and ``--web`` serves one console at a time.

Why it exists: the console used to start its engine's HTTP API on the config's port (8088/8090) every time, so a
second console (or a second ``--web`` tab: textual-serve starts one console process per tab) failed to start its
engine on the busy port, and then nothing worked. Now the console serves the HTTP API only when asked (``--http``;
``--http-port 0`` picks a free port), and the header shows where it listens. Under ``--web`` every tab's console
claims one lock per config file first: the first tab runs the console, a later tab says plainly that the console is
already open in another tab (and which process), instead of starting a second engine on the same config.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import warnings
from pathlib import Path
from typing import IO, TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from textual.app import App

    from console.web_access import WebAccess
    from engine.config import Settings

#: Set (to the lock file) in the console processes ``--web`` starts: each claims the lock before its engine starts.
WEB_LOCK_ENV = "AVA_CONSOLE_WEB_LOCK"
#: Set (to its pid) by the ``--web`` server for the consoles it starts: they end when it is gone.
WEB_SERVER_ENV = "AVA_CONSOLE_WEB_SERVER"
#: ``--attach http(s)://…``: the engine's API token when ``--token`` is not given.
TOKEN_ENV = "AVA_ENGINE_TOKEN"
#: The URL schemes ``--attach`` takes.
ATTACH_SCHEMES = ("redis", "rediss", "http", "https")


class Launched(Protocol):
    """What the start-up options set on the console (the app, typed here without importing it)."""

    http_port: int | None
    web_lock: Path | None
    web_lock_file: object | None


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The start-up options this module handles (the parser itself is ``console.app.build_parser``)."""
    p.add_argument(
        "--http",
        action="store_true",
        help="also serve the engine's HTTP API (health, metrics, MCP status) on engine.http.port; off by default",
    )
    p.add_argument(
        "--http-port",
        type=int,
        metavar="PORT",
        help="serve the HTTP API on this port instead (0: any free port; implies --http); the header shows it",
    )


def make_console(args: argparse.Namespace, path: Path) -> App[None]:
    """The console ``main`` runs, from the parsed arguments."""
    from console.app import AvaConsole

    port: int | None = args.http_port
    if port is not None and not 0 <= port <= 65535:
        raise ValueError(f"--http-port {port}: a port is 0 (any free port) to 65535")
    app = AvaConsole(path, serve_http=bool(args.http or port is not None))
    app.http_port = port
    lock = os.environ.get(WEB_LOCK_ENV)
    app.web_lock = Path(lock) if lock else None
    server = os.environ.get(WEB_SERVER_ENV, "")
    if lock and server.isdigit():  # a browser tab's console ends with the web server that started it
        from console.terminal_watch import watch_parent

        watch_parent(int(server))
    return app


def apply_overrides(app: Launched, settings: Settings) -> Settings:
    """The command line's say over the config file (``--http-port``), for every config the engine is given."""
    if app.http_port is not None:
        settings.engine.http.port = app.http_port
    return settings


def claim_web_tab(app: Launched) -> str | None:
    """Under ``--web``: take this config's tab lock for ``app`` (held while it runs); why not, if another has it."""
    if app.web_lock is None or app.web_lock_file is not None:
        return None
    app.web_lock_file, taken = claim(app.web_lock)
    return taken


def web_lock_path(config_path: Path) -> Path:
    """The lock file ``--web`` consoles of ``config_path`` share (in the user's runtime or temp directory)."""
    import platformdirs

    digest = hashlib.sha256(str(config_path.resolve()).encode()).hexdigest()[:16]
    with warnings.catch_warnings():  # without $XDG_RUNTIME_DIR (a plain ssh or container shell) a temp dir is fine
        warnings.simplefilter("ignore")
        runtime = platformdirs.user_runtime_dir("ava-console", ensure_exists=True)
    return Path(runtime) / f"web-{digest}.lock"


def claim(lock: Path) -> tuple[IO[str] | None, str | None]:
    """Take ``lock`` for this process (held until it exits): (the open file, None), or (None, why not)."""
    import fcntl

    f = lock.open("a+")
    try:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.seek(0)
        holder = f.read().strip() or "another process"
        f.close()
        return None, (
            f"ava-console is already open in another browser tab (process {holder}) for this config; "
            "use that tab, or close it and reload this one"
        )
    f.seek(0)
    f.truncate()
    f.write(str(os.getpid()))
    f.flush()
    return f, None


def serve_web(config_path: Path, access: WebAccess, extra: list[str]) -> None:
    """Serve the console in a browser to whoever has the printed URL's token (``console.web_serve``): one console;
    later tabs are told it is open elsewhere."""
    import shlex
    import sys

    from console.web_access import TOKEN_ENV as WEB_TOKEN_ENV
    from console.web_serve import GuardedServer

    os.environ.pop(WEB_TOKEN_ENV, None)  # read into ``access``; the tabs' consoles have no use for it
    os.environ[WEB_LOCK_ENV] = str(web_lock_path(config_path))  # the tabs' consoles inherit it
    os.environ[WEB_SERVER_ENV] = str(os.getpid())
    args = " ".join(shlex.quote(a) for a in extra)
    # textual-serve runs the command through a shell: `exec` makes the console the web server's own child, so it
    # sees the server die (console.terminal_watch.watch_parent) instead of a shell that outlives it
    command = f"exec {shlex.quote(sys.executable)} -m console.app --config {shlex.quote(str(config_path))} {args}"
    GuardedServer(command.strip(), access).serve()


def attach_target(url: str, token: str | None) -> tuple[str, str | None]:
    """``--attach URL`` checked before any screen: (the URL, the token for http(s) from ``--token`` or
    ``$AVA_ENGINE_TOKEN``); ``ValueError`` naming what is wrong (never the URL's password)."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError as e:
        raise ValueError(f"--attach: not a URL ({e})") from None
    shown = f"{parts.scheme}://{parts.hostname or ''}" + (f":{parts.port}" if parts.port else "")
    if parts.scheme not in ATTACH_SCHEMES:
        raise ValueError(f"--attach {shown}: the URL must start with redis://, rediss://, http:// or https://")
    if not parts.hostname:
        raise ValueError(f"--attach {shown}: the URL names no host")
    if parts.scheme in ("http", "https"):
        return url, token or os.environ.get(TOKEN_ENV) or None
    if token:
        raise ValueError("--token is for --attach http(s)://…; a Redis URL carries its own user and password")
    return url, None


def attach_main(url: str, token: str | None) -> int:
    """``ava-console --attach URL [--token T]``: a console over engines elsewhere, with no engine of its own."""
    import sys

    try:
        url, token = attach_target(url, token)
    except ValueError as e:
        print(f"ava-console: {e}", file=sys.stderr)
        return 2
    from console.app import AvaConsole

    AvaConsole(Path.cwd(), attach=url, token=token).run()
    return 0
