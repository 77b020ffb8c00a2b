"""Resource links and embedded resources in an MCP tool result: kept whole for the model, summarised for speech.

Why it exists: a tool may answer with links to resources (``resource_link``) or with the resources themselves
(``resource``, text or base64 blob). The model reasons over ``data``, so it gets every field of a link and the
whole content of an embedded resource (within the result's data budget: past it the content is cut and marked
``truncated``). The caller hears none of that raw: a URI or a document read aloud is noise on a phone line, so the
spoken message gets one short sentence naming the links ("2 links: Opening hours and Menu.") and counting the
attached documents.
"""

from __future__ import annotations

import base64
from typing import Any

from mcp.types import AudioContent, EmbeddedResource, ImageContent, ResourceLink


def b64_size(data: str) -> int:
    """Decoded size of base64 text (estimated when it does not decode)."""
    try:
        return len(base64.b64decode(data, validate=False))
    except ValueError:
        return len(data) * 3 // 4


def _link(item: ResourceLink) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": "resource_link",
        "uri": str(item.uri),
        "name": item.name,
        "mime_type": item.mime_type,
    }
    for key, value in (("title", item.title), ("description", item.description), ("size", item.size)):
        if value is not None:
            out[key] = value
    return out


def _embedded(item: EmbeddedResource, budget: list[int]) -> dict[str, Any]:
    res = item.resource
    text = getattr(res, "text", None)
    blob = getattr(res, "blob", None)
    size = len(text.encode("utf-8")) if isinstance(text, str) else b64_size(blob) if isinstance(blob, str) else 0
    out: dict[str, Any] = {"type": "resource", "uri": str(res.uri), "mime_type": res.mime_type, "size_bytes": size}
    key, body = ("text", text) if isinstance(text, str) else ("blob", blob) if isinstance(blob, str) else ("", None)
    if body is None:
        return out
    if len(body) <= budget[0]:
        out[key] = body
        budget[0] -= len(body)
    elif key == "text" and budget[0] > 0:
        out[key], out["truncated"] = body[: budget[0]], True
        budget[0] = 0
    else:  # a blob cut in half decodes to nothing useful: left out, and said so
        out["truncated"] = True
    return out


def attachments(content: list[Any], budget_chars: int) -> list[dict[str, Any]]:
    """Every non-text block of a result, in order: media summarised by type and size (never their bytes),
    links with all their fields, embedded resources whole within ``budget_chars`` of content in total."""
    budget = [budget_chars]
    out: list[dict[str, Any]] = []
    for item in content:
        if isinstance(item, ImageContent | AudioContent):
            out.append({"type": item.type, "mime_type": item.mime_type, "size_bytes": b64_size(item.data)})
        elif isinstance(item, ResourceLink):
            out.append(_link(item))
        elif isinstance(item, EmbeddedResource):
            out.append(_embedded(item, budget))
    return out


def _names(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    shown = names[:3]
    rest = len(names) - len(shown)
    if rest:
        return ", ".join(shown) + f" and {rest} more"
    return ", ".join(shown[:-1]) + f" and {shown[-1]}"


def speech_summary(items: list[dict[str, Any]]) -> str | None:
    """One sentence for the caller about a result's links and documents, or None when it has neither."""
    links = [
        str(a.get("title") or a.get("name") or "a resource").strip() for a in items if a["type"] == "resource_link"
    ]
    documents = sum(1 for a in items if a["type"] == "resource")
    parts: list[str] = []
    if links:
        parts.append(f"{len(links)} link{'s' if len(links) != 1 else ''}: {_names(links)}")
    if documents:
        parts.append(f"{documents} attached document{'s' if documents != 1 else ''}")
    if not parts:
        return None
    sentence = "; ".join(parts)
    return sentence[0].upper() + sentence[1:] + "."
