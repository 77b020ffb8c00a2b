"""``strip_media`` replaces media with summaries only: other data passes untouched (the same object), and a
structure too deep to read is cut, not passed on unread."""

from __future__ import annotations

import base64
import hashlib
from typing import Any

from mcp.types import CallToolResult, TextContent

from engine.mcp.media import MAX_MEDIA_DEPTH, strip_media
from engine.mcp.results import FALLBACK_MESSAGE, to_tool_result

PNG = base64.b64encode(b"\x89PNG fake").decode()
SUMMARY = {
    "type": "image",
    "mime_type": "image/png",
    "size_bytes": 9,
    "sha256": hashlib.sha256(b"\x89PNG fake").hexdigest(),
}


def test_plain_data_is_left_alone_and_not_copied() -> None:
    plain: dict[str, Any] = {
        "data": "not media: no MIME type",
        "rows": [{"type": "text", "data": "x", "mimeType": "text/plain"}, 1, None, "data: ordinary text"],
    }
    assert strip_media(plain) is plain


def test_media_is_found_at_any_depth_and_wherever_it_is_keyed() -> None:
    value = {"a": [{"b": {"type": "image", "data": PNG, "mimeType": "image/png"}}], "n": 1}
    assert strip_media(value) == {"a": [{"b": SUMMARY}], "n": 1}
    assert strip_media({"data": PNG, "mime_type": "image/png"}) == SUMMARY  # no type: the MIME type says image
    assert strip_media({"uri": "file:///x", "blob": PNG})["sha256"] == SUMMARY["sha256"]
    assert strip_media(f"data:image/png;base64,{PNG}") == SUMMARY
    nested = {"type": "image", "data": PNG, "mimeType": "image/png", "thumb": {"type": "image", "data": PNG}}
    assert strip_media(nested)["thumb"]["sha256"] == SUMMARY["sha256"]


def test_too_deep_is_cut() -> None:
    deep: Any = {"type": "image", "data": PNG, "mimeType": "image/png"}
    for _ in range(MAX_MEDIA_DEPTH + 5):
        deep = [deep]
    out = strip_media(deep)
    for _ in range(MAX_MEDIA_DEPTH):
        out = out[0]
    assert out == {"omitted": f"nested deeper than {MAX_MEDIA_DEPTH} levels"}


def test_a_data_uri_text_is_neither_said_nor_kept() -> None:
    r = to_tool_result(CallToolResult(content=[TextContent(type="text", text=f"data:image/png;base64,{PNG}")]))
    assert r.data == SUMMARY and r.message == FALLBACK_MESSAGE
