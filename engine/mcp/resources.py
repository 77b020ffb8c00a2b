"""Resource links and embedded resources in an MCP tool result: kept whole for the model, summarised for speech.

Why it exists: a tool may answer with links to resources (``resource_link``) or with the resources themselves
(``resource``, text or base64 blob). The model reasons over ``data``, so it gets every field of a link and the
whole text of an embedded resource (within the result's data budget: past it the text is cut and marked
``truncated``); a blob, like an image or audio block, is summarised by ``engine.mcp.media`` (type, size,
SHA-256). The caller hears none of that raw: a URI or a document read aloud is noise on a phone line, so the
spoken message gets one short sentence naming the links ("2 links: Opening hours and Menu.") and counting the
attached documents.
"""

from __future__ import annotations

from typing import Any

from mcp.types import AudioContent, EmbeddedResource, ImageContent, ResourceLink

from engine.mcp.media import summary
from engine.text.spoken_lists import spoken_list


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
    if isinstance(blob, str):
        return summary("resource", res.mime_type, blob, uri=str(res.uri))
    size = len(text.encode("utf-8")) if isinstance(text, str) else 0
    out: dict[str, Any] = {"type": "resource", "uri": str(res.uri), "mime_type": res.mime_type, "size_bytes": size}
    if not isinstance(text, str):
        return out
    if len(text) <= budget[0]:
        out["text"] = text
        budget[0] -= len(text)
    elif budget[0] > 0:
        out["text"], out["truncated"] = text[: budget[0]], True
        budget[0] = 0
    else:
        out["truncated"] = True
    return out


def attachments(content: list[Any], budget_chars: int) -> list[dict[str, Any]]:
    """Every non-text block of a result, in order: media and blobs summarised (type, size, SHA-256; never their
    bytes), links with all their fields, embedded texts whole within ``budget_chars`` in total."""
    budget = [budget_chars]
    out: list[dict[str, Any]] = []
    for item in content:
        if isinstance(item, ImageContent | AudioContent):
            out.append(summary(item.type, item.mime_type, item.data))
        elif isinstance(item, ResourceLink):
            out.append(_link(item))
        elif isinstance(item, EmbeddedResource):
            out.append(_embedded(item, budget))
    return out


def _names(names: list[str]) -> str:
    return spoken_list(names, most=3)


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
