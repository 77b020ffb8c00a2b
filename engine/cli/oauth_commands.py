"""``ava-engine mcp login SERVER`` and ``mcp logout SERVER``: OAuth sign-in to a remote MCP server from a terminal.

Why it exists: a running engine never opens a browser (a server without a usable token waits in ``needs sign-in``);
the operator signs in here, once, and the tokens go to the OS keyring where every engine on the machine finds them.
``login`` prints the authorization URL (and opens a browser when one can be shown), receives the redirect on a
loopback listener, stores the tokens and lists the server's tools as a test. ``logout`` deletes the tokens and the
client registration; a running engine (``serve``, the console) sees either within ``SIGN_IN_POLL_S`` (it reads
the keyring entry: ``engine.mcp.oauth_watch``). The scopes asked for are named (after a step-up: the new ones too).
Neither ever prints a token: every value read from or written to the keyring joins the
process's redactor, whose boundary every line of output passes.

With ``--json``: ``login`` prints one line ``{"server", "authorize_url", "redirect_uri", "scopes"}`` as soon as the
URL is known, then the result ``{"server", "signed_in", "expires_at", "can_refresh", "scope", "tools", "elapsed_ms"}``;
``logout`` prints ``{"server", "signed_out", "had_tokens"}``. Exit 1 when sign-in failed, 2 for an unknown server or
one without ``auth.oauth``. A grant without a person (``auth.oauth.grant``) opens no browser and prints no URL:
``login`` fetches a token, stores it and prints the result with its ``grant`` (and a ``note`` when the server asked
for no token at all).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from engine.cli.common import REDACTOR, CommandFailed, UsageError, load, print_json
from engine.cli.mcp_commands import _mcp_actions


def register(sub: Any) -> None:
    actions = _mcp_actions(sub)
    p = actions.add_parser("login", help="sign in to a remote MCP server (OAuth 2.1); tokens go to the OS keyring")
    p.add_argument("server", metavar="SERVER", help="the MCP server id (an http server with auth.oauth)")
    p.add_argument("--no-browser", action="store_true", help="only print the URL; do not try to open a browser")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds to wait for the sign-in (default 300)")
    p.set_defaults(func=cmd_login)
    p = actions.add_parser("logout", help="forget a remote MCP server's OAuth tokens (deletes them from the keyring)")
    p.add_argument("server", metavar="SERVER", help="the MCP server id")
    p.set_defaults(func=cmd_logout)


def _server(args: argparse.Namespace) -> Any:
    settings = load(args)
    cfg = settings.mcp.servers.get(args.server)
    if cfg is None:
        known = ", ".join(sorted(settings.mcp.servers)) or "none"
        raise UsageError(f"SERVER: unknown MCP server {args.server!r} (configured: {known})")
    if cfg.auth is None:
        raise UsageError(
            f"SERVER: server {args.server!r} has no 'auth.oauth' in mcp.servers.{args.server} "
            "(only an http server with it signs in)"
        )
    return cfg


async def cmd_login(args: argparse.Namespace) -> int:
    from engine.mcp.signin import SignIn, SignInError, open_in_browser

    cfg = _server(args)
    if args.timeout <= 0:
        raise UsageError("--timeout: must be more than 0 seconds")
    from engine.config.secrets import unencrypted_warning

    if (warning := unencrypted_warning()) is not None:  # the tokens go to the keyring
        print(f"warning: {warning}", file=sys.stderr)
    sign_in = SignIn(
        args.server, cfg, base_dir=args.config_path.parent, on_secret=REDACTOR.update, timeout_s=args.timeout
    )

    def show(url: str) -> None:
        scopes = _query(url, "scope").split()
        if args.json:
            print_json(
                {
                    "server": args.server,
                    "authorize_url": url,
                    "redirect_uri": _query(url, "redirect_uri"),
                    "scopes": scopes,
                }
            )
        else:
            asks = f" (it asks for scopes: {' '.join(scopes)})" if scopes else ""
            print(f"Sign in to {args.server} in a browser{asks}:\n\n  {url}\n")
            print(f"Waiting for the redirect to {_query(url, 'redirect_uri')} (up to {args.timeout:g} s) …")
        sys.stdout.flush()
        if not args.no_browser:
            open_in_browser(url)

    try:
        report = await sign_in.run(show)
    except SignInError as e:
        raise CommandFailed(str(e)) from None
    if args.json:
        print_json(report)
    else:
        n = len(report["tools"])
        how = "signed in" if "grant" not in report else f"token stored ({report['grant']})"
        done = report.get("note") or how
        print(f"{args.server}: {done}; {n} tool{'' if n == 1 else 's'}: {', '.join(report['tools'][:20]) or '-'}")
    return 0


def _query(url: str, name: str) -> str:
    from urllib.parse import parse_qs, urlparse

    return parse_qs(urlparse(url).query).get(name, [""])[0]


async def cmd_logout(args: argparse.Namespace) -> int:
    from engine.config import SecretsError
    from engine.mcp.signin import sign_out

    cfg = _server(args)
    try:
        had = sign_out(args.server, cfg)
    except SecretsError as e:
        raise CommandFailed(str(e)) from None
    if args.json:
        print_json({"server": args.server, "signed_out": True, "had_tokens": had})
    else:
        print(f"{args.server}: signed out" + ("" if had else " (no tokens were stored)"))
    return 0
