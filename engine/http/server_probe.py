"""``POST /mcp/test/{server_id}``: a fresh connect → initialize → list of a configured or an unsaved server.

Why it exists: testing a server means starting it, and an unsaved config in the body names any command (or any
URL, with any headers) — a remote command runner if anyone could send one. So an unsaved config runs only on an
authenticated request (``engine.http.auth_token`` set and sent), while testing an already-configured server id
with an empty body stays open on loopback; at most ``MAX_CONCURRENT_TESTS`` tests run at once (429 beyond).
The body's strings are expanded exactly like the config file's (``${VAR}``, ``${VAR:-default}``,
``${keyring:NAME}``, ``{python}`` in ``command``) with the config's own helpers, and every expanded value is
masked in the report.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from typing import Any

import pydantic
from aiohttp import web

from engine.config.errors import KeyPath, format_path
from engine.config.expand import ExpansionError, expand, expand_python
from engine.config.secrets import lookup_secret
from engine.http.backend import AUTHENTICATED, BACKEND_KEY
from engine.http.body import BodyError, read_json
from engine.http.responses import error, json_response
from engine.redaction.redactor import Redactor

MAX_CONCURRENT_TESTS = 2
UNSAVED_NEEDS_TOKEN = (
    "testing an unsaved server config starts the command (or contacts the URL) it names, so it needs an "
    "authenticated request: set engine.http.auth_token and send 'Authorization: Bearer <token>'. Testing a "
    "configured server (an empty body) needs no token on loopback."
)


class ProbeSlots:
    """A non-blocking counter: a test either gets a slot now or is refused (429), never queued."""

    def __init__(self, limit: int = MAX_CONCURRENT_TESTS) -> None:
        self.limit = limit
        self.busy = 0

    def take(self) -> bool:
        if self.busy >= self.limit:
            return False
        self.busy += 1
        return True

    def give_back(self) -> None:
        self.busy -= 1


SLOTS_KEY: web.AppKey[ProbeSlots] = web.AppKey("test_slots", ProbeSlots)


def expand_server_config(
    data: Mapping[str, Any], revealed: set[str], env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """Every string of an unsaved server config expanded as the loader does; ``BodyError(400)`` names the key."""
    environ = os.environ if env is None else env

    def walk(node: Any, path: KeyPath) -> Any:
        if isinstance(node, Mapping):
            return {k: walk(v, (*path, str(k))) for k, v in node.items()}
        if isinstance(node, list):
            return [walk(v, (*path, i)) for i, v in enumerate(node)]
        if not isinstance(node, str):
            return node
        try:
            text = expand(node, env=environ, lookup_secret=lookup_secret, revealed=revealed)
        except ExpansionError as e:
            raise BodyError(400, f"{format_path(path)}: {e.message}") from None
        return expand_python(text) if len(path) == 2 and path[0] == "command" else text

    return dict(walk(data, ()))


def _redactor(revealed: set[str]) -> Redactor:
    """Masks the expanded values long enough to be credentials (as the loader does in its messages)."""
    return Redactor(revealed)  # it skips values shorter than MIN_SECRET_LENGTH itself


def _target(request: web.Request, body: Any) -> str | dict[str, Any]:
    """The configured id, or the unsaved config (``{...}`` or ``{"config": {...}}``) for that id."""
    server_id = request.match_info["server_id"]
    if body in (None, {}):
        return server_id
    if not isinstance(body, dict):
        raise BodyError(400, "the body must be a JSON object (a server config) or empty")
    cfg = body.get("config", body)
    if not isinstance(cfg, dict):
        raise BodyError(400, "'config' must be an object (a server config as in mcp.servers.<id>)")
    if not request.get(AUTHENTICATED, False):
        raise BodyError(403, UNSAVED_NEEDS_TOKEN, "engine.http.auth_token")
    return {**cfg, "id": server_id}


async def mcp_test(request: web.Request) -> web.Response:
    backend = request.app[BACKEND_KEY]
    slots = request.app[SLOTS_KEY]
    revealed: set[str] = set()
    try:
        body = await read_json(request, backend.settings.engine.http.max_body_bytes)
        target = _target(request, body)
        if not slots.take():
            return error(
                429,
                f"{slots.limit} server tests are already running; try again when one has finished",
                headers={"Retry-After": "1"},
            )
    except BodyError as e:
        return error(e.status, e.message, key=e.key)
    try:
        if isinstance(target, dict):
            target = await asyncio.to_thread(expand_server_config, target, revealed)
        report = await backend.test_server(target)
    except BodyError as e:
        return error(e.status, _redactor(revealed)(e.message), key=e.key)
    except KeyError as e:
        return error(404, str(e.args[0]) if e.args else str(e))
    except pydantic.ValidationError as e:
        problems = [f"{'.'.join(str(p) for p in err['loc']) or '(server)'}: {err['msg']}" for err in e.errors()]
        return error(400, _redactor(revealed)("invalid server config: " + "; ".join(problems)))
    except ValueError as e:
        return error(400, _redactor(revealed)(str(e)))
    finally:
        slots.give_back()
    return json_response(_redactor(revealed).value(report))
