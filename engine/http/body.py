"""Read a JSON request body within bounds: size before reading, nesting depth before parsing.

Why it exists: ``json.loads`` on a megabyte of ``[[[[…`` raises ``RecursionError`` (a 500), and a body read
without a limit holds whatever a client sends. ``read_json`` stops reading past ``engine.http.max_body_bytes``
(413, also for chunked bodies without a Content-Length) and scans the text's nesting before parsing it (400), so
every bad body gets a clear answer instead of an exception.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from engine.bounds.json_text import JsonBoundsError, loads_bounded, nesting_exceeds
from engine.http.guard import too_large

__all__ = ["MAX_JSON_DEPTH", "BodyError", "nesting_exceeds", "parse_json", "read_body", "read_json"]

#: Deepest JSON accepted in a request body (a server config needs about 4 levels).
MAX_JSON_DEPTH = 64


class BodyError(Exception):
    """A request body refused with ``status`` and a message fit for the client."""

    def __init__(self, status: int, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.key = key


def parse_json(raw: bytes, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """Bytes → JSON value, or ``BodyError(400)`` saying why not."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise BodyError(400, f"the body is not UTF-8 text (bad byte at offset {e.start})") from None
    try:
        return loads_bounded(text, max_depth)
    except JsonBoundsError as e:
        raise BodyError(400, f"the JSON body is {e}" if e.too_deep else f"the body is not valid JSON: {e}") from None


async def read_body(request: web.Request, limit: int) -> bytes:
    """The whole body, refused with 413 as soon as it is longer than ``limit`` bytes."""
    if request.content_length is not None and request.content_length > limit:
        raise BodyError(413, too_large(request.content_length, limit), "engine.http.max_body_bytes")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.content.iter_any():
        size += len(chunk)
        if size > limit:
            raise BodyError(413, too_large(size, limit) + " (counted so far)", "engine.http.max_body_bytes")
        chunks.append(chunk)
    return b"".join(chunks)


async def read_json(request: web.Request, limit: int, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The parsed JSON body, ``None`` when there is none (see ``BodyError`` for the refusals)."""
    if not request.body_exists:
        return None
    raw = await read_body(request, limit)
    if not raw.strip():
        return None
    return parse_json(raw, max_depth)
