"""A tool's declared ``outputSchema``, and turning a result that contradicts it into a clear error for that call.

Why it exists: the SDK checks ``structuredContent`` against the tool's ``outputSchema`` (a compiled validator per
tool, kept until the schema changes) and raises a ``RuntimeError`` whose text carries the whole schema and value.
The engine keeps that check (a server that lies about its result shape must not feed the model a wrong shape)
but reports it the way every bad input is reported here: one short message naming the tool and the JSON path
("$.temperature: 'hot' is not of type 'number'"), on that call only; the server stays up, other calls go on.
"""

from __future__ import annotations

import json
from typing import Any

#: Longest description of what is wrong at the path (a value's repr can be megabytes).
MAX_REASON = 160
#: Largest output schema kept for display (``tools --json``, the console's tool inspector); larger is summarised.
MAX_SCHEMA_CHARS = 16_000


def shown_schema(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """The output schema as shown to people: whole, or a note when it is too large to be useful on a screen."""
    if schema is None:
        return None
    size = len(json.dumps(schema, ensure_ascii=False, default=str))
    if size <= MAX_SCHEMA_CHARS:
        return schema
    return {"type": schema.get("type", "object"), "x-ava-truncated": f"{size} characters, not shown"}


def mismatch(tool: str, exc: RuntimeError) -> str | None:
    """The message for an SDK output-schema failure of ``tool``; None when ``exc`` is something else."""
    from jsonschema import ValidationError  # here, not at import: jsonschema costs engine start-up ~0.1 s

    cause = exc.__cause__
    if isinstance(cause, ValidationError):
        reason = cause.message if len(cause.message) <= MAX_REASON else cause.message[: MAX_REASON - 1] + "…"
        return f"{tool} returned a result that does not match its output schema at {cause.json_path}: {reason}"
    text = str(exc)
    if "has an output schema but did not return structured content" in text:
        return f"{tool} declares an output schema but returned no structured content"
    if text.startswith("Invalid schema for tool"):
        return f"{tool} declares an output schema that is not valid JSON Schema; its results cannot be checked"
    return None
