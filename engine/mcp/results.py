"""Turn an MCP ``CallToolResult`` into the product's ``ToolResult`` {status, message, data}.

Why it exists: the model and the caller need different things from one result. ``message`` is what a voice agent
can say (a template, a chosen field, the first text, or a neutral fallback — never a JSON blob or a megabyte of
text); ``data`` is what the model reasons over (structured content, else parsed JSON text, else text), with
images, audio and blobs summarised by type, size and SHA-256 instead of inlined, wherever they are (content
blocks, structured content, JSON text, ``data:`` URIs: ``engine.mcp.media``), and resource links and embedded
texts kept whole (``engine.mcp.resources``; the message gets one sentence about them). ``isError`` results are
errors, not successes (the mistake the reference system makes).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp.types import CallToolResult, TextContent

from engine.core.templates import _PLACEHOLDER, lookup, render
from engine.mcp.media import is_data_uri, strip_media
from engine.mcp.resources import attachments as _attachments
from engine.mcp.resources import speech_summary
from engine.tools import speech as spoken
from engine.tools.base import ToolDefinition, ToolResult

FALLBACK_MESSAGE = "I've fetched the result."
ERROR_FALLBACK = "The tool reported an error."
#: Longest message handed to speech; longer text is cut at a sentence or word boundary.
MAX_SPEECH_CHARS = 300
#: Largest text kept in ``data``; the rest is dropped and the result marked ``truncated``.
MAX_DATA_CHARS = 64_000
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True, slots=True)
class SpeechOptions:
    """Per-tool speech shaping from config: a template with ``{a.b}`` paths, or a dotted field."""

    template: str | None = None
    field: str | None = None


def speakable(text: str, limit: int = MAX_SPEECH_CHARS) -> str:
    """Collapse whitespace and cut to ``limit`` characters at a sentence end, else a word, adding an ellipsis."""
    # Only a prefix is flattened (growing while whitespace collapses it below the limit): a multi-megabyte text
    # costs no more than a short one, instead of a regex pass over all of it on the event loop.
    if len(text) <= limit and text.isprintable() and "  " not in text and text[:1] != " " and text[-1:] != " ":
        return text  # short, one line, single spaces (isprintable is False for every other whitespace)
    window = 4 * limit + 1
    flat = _SPACES.sub(" ", text[:window]).strip()
    while len(flat) <= limit and window < len(text):
        window *= 4
        flat = _SPACES.sub(" ", text[:window]).strip()
    if len(flat) <= limit:
        return flat
    cut = flat[:limit]
    for mark in (". ", "! ", "? "):
        end = cut.rfind(mark)
        if end >= limit // 2:
            return cut[: end + 1]
    space = cut.rfind(" ")
    return (cut[:space] if space >= limit // 2 else cut).rstrip(" ,;:") + "…"


def _parse_json(text: str) -> Any:
    stripped = text.strip()
    if not stripped or stripped[0] not in "{[":
        return None
    try:
        return json.loads(stripped)
    except ValueError:
        return None


def _template_message(template: str, values: Mapping[str, Any]) -> str | None:
    """Render only when every placeholder resolves (a missing key falls through to the next option)."""
    for m in _PLACEHOLDER.finditer(template):
        try:
            lookup(values, m.group(1))
        except KeyError:
            return None
    out = render(template, values).strip()
    return out or None


def _field_message(path: str, sources: list[Any]) -> str | None:
    for src in sources:
        if not isinstance(src, Mapping | list):
            continue
        try:
            value = lookup(src, path) if isinstance(src, Mapping) else lookup({"_": src}, f"_.{path}")
        except KeyError:
            continue
        if value is None:
            continue
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        return speakable(text) or None
    return None


def _cap(text: str) -> tuple[str, bool]:
    return (text, False) if len(text) <= MAX_DATA_CHARS else (text[:MAX_DATA_CHARS], True)


_PLAIN = SpeechOptions()


def to_tool_result(
    result: CallToolResult, speech: SpeechOptions | None = None, tool: ToolDefinition | None = None
) -> ToolResult:
    """Shape one MCP result; see the module docstring for the order of choices. An error's own text is raw: the
    caller hears ``spoken.reported_error(tool)`` instead, unless config shaped the message (a template or field)."""
    speech = speech or _PLAIN
    if not speech.template and not speech.field and (quick := _one_text_result(result, tool)) is not None:
        return quick
    content = result.content
    texts = [c.text for c in content if isinstance(c, TextContent)]
    joined = "\n".join(texts)
    attachments = _attachments(content, max(0, MAX_DATA_CHARS - len(joined)))
    parsed = _parse_json(texts[0]) if len(texts) == 1 and len(texts[0]) <= 4 * MAX_DATA_CHARS else None
    data = _data(result, texts, joined, parsed)
    if attachments:
        data = {"result": data, "attachments": attachments} if data is not None else {"attachments": attachments}
    message = _configured_message(speech, result, data, parsed, joined)
    configured = message is not None
    if message is None:
        message = _default_message(texts, attachments)
    if result.is_error:
        return ToolResult("error", message or ERROR_FALLBACK, data, spoken="" if configured else _spoken_error(tool))
    return ToolResult("success", message or FALLBACK_MESSAGE, data)


def _one_text_result(result: CallToolResult, tool: ToolDefinition | None) -> ToolResult | None:
    """The common small answer, one text block (and maybe its structured form, as FastMCP tools with a return
    type send): what the general path gives, without its detours. None when the general path is needed."""
    content = result.content
    if len(content) != 1 or type(content[0]) is not TextContent:
        return None
    text = content[0].text
    if len(text) > MAX_DATA_CHARS:
        return None
    structured = result.structured_content
    is_json = _parse_json(text) is not None
    if structured is None and is_json:
        return None
    said = speakable(text) if not is_json and text.strip() and not is_data_uri(text) else ""
    shaped = strip_media(structured if structured is not None else text)
    if result.is_error:
        return ToolResult("error", said or ERROR_FALLBACK, shaped, spoken=_spoken_error(tool))
    return ToolResult("success", said or FALLBACK_MESSAGE, shaped)


def _data(result: CallToolResult, texts: list[str], joined: str, parsed: Any) -> Any:
    """What the model reasons over: structured content, else parsed JSON text, else text (capped), media stripped."""
    if result.structured_content is not None:
        data = strip_media(result.structured_content)
        if data is not result.structured_content or len(joined) > MAX_DATA_CHARS or not texts:  # can it be big?
            dumped = json.dumps(data, ensure_ascii=False, default=str)
            if len(dumped) > MAX_DATA_CHARS:
                data = {"text": dumped[:MAX_DATA_CHARS], "truncated": True, "size_chars": len(dumped)}
        return data
    if parsed is not None:
        return strip_media(parsed)
    if is_data_uri(joined):
        return strip_media(joined)
    if not texts:
        return None
    capped, truncated = _cap(joined)
    return {"text": capped, "truncated": True, "size_chars": len(joined)} if truncated else capped


def _configured_message(
    speech: SpeechOptions, result: CallToolResult, data: Any, parsed: Any, joined: str
) -> str | None:
    """The message config asked for (a template, else a field), or None when it has none or it does not resolve."""
    message: str | None = None
    if speech.template:
        values: dict[str, Any] = {}
        if isinstance(data, Mapping):
            values.update(data)
        elif data is not None:
            values["result"] = data
        if isinstance(parsed, Mapping):
            values = {**parsed, **values}
        values.setdefault("text", joined)
        message = _template_message(speech.template, values)
    if message is None and speech.field:
        message = _field_message(speech.field, [result.structured_content, parsed])
    return message


def _default_message(texts: list[str], attachments: list[dict[str, Any]]) -> str | None:
    """The first speakable text (not JSON, not a data URI), with one sentence about any attachments."""
    message: str | None = None
    about = speech_summary(attachments) if attachments else None
    room = MAX_SPEECH_CHARS - (len(about) + 1 if about else 0)
    for text in texts:
        if text.strip() and _parse_json(text) is None and not is_data_uri(text):
            message = speakable(text, max(room, MAX_SPEECH_CHARS // 2))
            break
    if about is not None:  # the caller hears what the links are, never their URIs
        message = speakable(f"{message} {about}" if message else about)
    return message


def _spoken_error(tool: ToolDefinition | None) -> str:
    return spoken.reported_error(tool) if tool is not None else spoken.REPORTED_ERROR
