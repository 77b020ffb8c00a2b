"""JSON answers of the engine's HTTP API: every refusal is ``{"error": ..., "key": ...}`` with a status.

Why it exists: the guard, the body reader and the routes all refuse requests, and an operator reading a refusal
must learn what was wrong and, where a setting admits it, which config key does (``key``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from aiohttp import web

#: Longest piece of a request (a Host or Origin value) repeated in an error message.
ECHO_LIMIT = 100


def json_response(data: Any, status: int = 200, headers: Mapping[str, str] | None = None) -> web.Response:
    return web.json_response(
        data, status=status, headers=headers, dumps=lambda o: json.dumps(o, default=str, ensure_ascii=False)
    )


def error(
    status: int, message: str, *, key: str | None = None, headers: Mapping[str, str] | None = None
) -> web.Response:
    body: dict[str, Any] = {"error": message}
    if key is not None:
        body["key"] = key
    return json_response(body, status=status, headers=headers)


def echo(value: str) -> str:
    """``value`` quoted for an error message, cut to ``ECHO_LIMIT`` characters."""
    return repr(value if len(value) <= ECHO_LIMIT else value[: ECHO_LIMIT - 1] + "…")
