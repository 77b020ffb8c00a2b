"""Media in an MCP tool result, summarised for ``data``: kind, MIME type, size and SHA-256 of the bytes, never base64.

Why it exists: ``ToolResult.data`` goes to the model's provider, events, logs, recordings and ``mcp call --json``;
base64 there is tens of kilobytes no model can look at and no log should carry (server-filesystem's
``read_media_file`` repeats its image block in ``structuredContent``: 64,000 characters of base64 in ``data``).
Content blocks are summarised where ``engine.mcp.resources`` lists them; ``strip_media`` does the same for media
inside structured content or a JSON text: an image/audio/blob block (``data`` plus a MIME type), a resource's
``blob``, a ``data:…;base64,`` URI. The engine's own MCP endpoint is not affected: it passes the content blocks a
tool puts under ``data["mcp_content"]`` to its clients as they are (``engine.mcp_endpoint.results``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from typing import Any

#: Content-block types that carry base64 in ``data`` (``blob`` is server-filesystem's type for other files).
MEDIA_TYPES = frozenset({"image", "audio", "video", "blob"})
#: How deep ``strip_media`` looks; anything below is replaced, not passed on unread.
MAX_MEDIA_DEPTH = 200
_RAW_KEYS = frozenset({"data", "blob", "mimeType", "mime_type"})


def decoded(data: str) -> bytes:
    """The bytes of base64 text (line breaks and missing padding tolerated); the text's own bytes when it is not
    base64, so its size and hash still say something."""
    try:
        return base64.b64decode(data + "=" * (-len(data) % 4), validate=False)
    except (binascii.Error, ValueError):
        return data.encode("utf-8", "surrogatepass")


def summary(kind: str, mime_type: str | None, data: str, **more: Any) -> dict[str, Any]:
    """``{"type", …more, "mime_type", "size_bytes", "sha256"}`` for base64 ``data``."""
    raw = decoded(data)
    return {
        "type": kind,
        **more,
        "mime_type": mime_type,
        "size_bytes": len(raw),
        "sha256": hashlib.sha256(raw).hexdigest(),
    }


def _kind(mime: str | None) -> str:
    major = (mime or "").split("/", 1)[0].lower()
    return major if major in MEDIA_TYPES else "blob"


def _block(value: dict[str, Any], depth: int) -> dict[str, Any] | None:
    """The summary of one mapping that carries media, or None when it carries none itself."""
    mime = value.get("mimeType", value.get("mime_type"))
    mime = mime if isinstance(mime, str) else None
    kind = value.get("type")
    data = value.get("data")
    if isinstance(data, str) and (kind in MEDIA_TYPES or (mime is not None and _kind(mime) != "blob")):
        payload, default_kind = data, _kind(mime)
    elif isinstance(value.get("blob"), str) and ("uri" in value or mime is not None):
        payload, default_kind = value["blob"], "resource"
    else:
        return None
    rest = strip_media({k: v for k, v in value.items() if k not in _RAW_KEYS and k != "type"}, depth + 1)
    return summary(kind if isinstance(kind, str) else default_kind, mime, payload, **rest)


def _data_uri(text: str) -> dict[str, Any] | None:
    """The summary of a ``data:[mime];base64,…`` URI; None for any other text."""
    head, comma, data = text.partition(",")
    if not comma or not head.lower().endswith(";base64"):
        return None
    mime = head[5:].split(";", 1)[0] or None
    return summary(_kind(mime), mime, data)


def is_data_uri(text: str) -> bool:
    """Whether ``text`` is a base64 ``data:`` URI (said as nothing, kept in ``data`` as a summary)."""
    return text[:5].lower() == "data:" and ";base64," in text[:300].lower()


def strip_media(value: Any, depth: int = 0) -> Any:
    """``value`` with every media payload in it replaced by its ``summary``; the same object when it has none."""
    if isinstance(value, str):
        return (_data_uri(value) or value) if is_data_uri(value) else value
    if not isinstance(value, dict | list):
        return value
    if depth >= MAX_MEDIA_DEPTH:
        return {"omitted": f"nested deeper than {MAX_MEDIA_DEPTH} levels"}
    if isinstance(value, dict):
        if "data" in value or "blob" in value:
            found = _block(value, depth)
            if found is not None:
                return found
        changed: dict[Any, Any] | None = None
        for key, item in value.items():
            kind = type(item)
            if kind is int or kind is float or kind is bool or item is None:
                continue
            if kind is not str or is_data_uri(item):
                new = strip_media(item, depth + 1)
                if new is not item:
                    changed = dict(value) if changed is None else changed
                    changed[key] = new
        return value if changed is None else changed
    items = [strip_media(v, depth + 1) for v in value]
    return value if all(a is b for a, b in zip(items, value, strict=True)) else items
