"""``ava-engine drain`` (and ``--resume``): stop a running ``serve`` taking new calls, for rolling restarts.

Why it exists: an operator restarting engines one by one drains one (live calls finish, new ones are refused,
phone callers hear busy and Asterisk routes them elsewhere), waits until it is empty, restarts it, and goes on.
The command talks to the running engine through its HTTP API (``POST /drain``, ``GET /capacity``) at the
config's ``engine.http`` address, or ``--url``, with the config's ``engine.http.auth_token``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from engine.cli.common import CommandFailed, UsageError, load, print_json

#: How often ``--wait`` asks how many calls are still live.
POLL_S = 0.5


def register(sub: Any) -> None:
    p = sub.add_parser("drain", help="stop a running serve taking new calls; its live calls finish")
    p.add_argument("--resume", action="store_true", help="take new calls again (undo a drain)")
    p.add_argument(
        "--wait",
        type=float,
        default=None,
        metavar="SECONDS",
        help="after draining, wait up to SECONDS for the live calls to end (exit 1 if they do not)",
    )
    p.add_argument("--url", default=None, help="the engine's HTTP API (default: engine.http.host:port of the config)")
    p.set_defaults(func=cmd_drain)


def engine_url(settings: Any) -> str:
    http = settings.engine.http
    host = {"0.0.0.0": "127.0.0.1", "::": "::1"}.get(http.host, http.host)
    host = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{host}:{http.port}"


async def _request(session: Any, method: str, url: str, token: str | None) -> dict[str, Any]:
    import aiohttp

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        async with session.request(method, url, headers=headers) as r:
            body = await r.json(content_type=None)
            if r.status == 401:
                raise CommandFailed(
                    f"{url} wants the engine's bearer token: engine.http.auth_token of this config "
                    "is missing or not the running engine's"
                )
            if r.status >= 400:
                msg = body.get("error", body) if isinstance(body, dict) else body
                raise CommandFailed(f"{method} {url} answered {r.status}: {msg}")
            return dict(body)
    except (aiohttp.ClientError, TimeoutError, ValueError) as e:
        raise CommandFailed(
            f"no ava-engine serve answers at {url} ({type(e).__name__}: {e}); is it running, and is "
            "engine.http (or --url) where it listens?"
        ) from None


async def cmd_drain(args: argparse.Namespace) -> int:
    import aiohttp

    settings = load(args)
    if args.wait is not None and (args.resume or args.wait <= 0):
        raise UsageError("--wait takes a number of seconds above 0, and goes with a drain, not --resume")
    base = (args.url or engine_url(settings)).rstrip("/")
    token = settings.engine.http.auth_token
    secret = token.get_secret_value() if token is not None else None
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
        state = await _request(session, "POST", f"{base}/{'resume' if args.resume else 'drain'}", secret)
        deadline = time.monotonic() + (args.wait or 0)
        while args.wait is not None and state.get("live_calls") and time.monotonic() < deadline:
            await asyncio.sleep(POLL_S)
            state = await _request(session, "GET", f"{base}/capacity", secret)
    if args.json:
        print_json(state)
    else:
        what = "taking calls" if not state.get("draining") else "draining"
        limit = state.get("max_calls")
        print(f"{base}: {what}; {state.get('live_calls')} live call(s)" + (f", max_calls {limit}" if limit else ""))
    if args.wait is not None and state.get("live_calls"):
        raise CommandFailed(f"{state.get('live_calls')} call(s) still live after {args.wait:g} s")
    return 0
