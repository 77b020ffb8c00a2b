"""JSON Schema of the config file, for editor completion and validation while typing.

``ava-engine schema --output FILE`` writes it; a config then starts with
``# yaml-language-server: $schema=FILE``. Generated from ``Settings`` so it never drifts from the loader, with
two adjustments for YAML as people write it: numbers and booleans may also be a ``${...}`` reference (expanded
before validation), and MCP server ids carry their naming rule as ``propertyNames``.
"""

from __future__ import annotations

import json
from typing import Any

from engine.config.models import SERVER_ID_RE, Settings

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
REFERENCE_PATTERN = r"^.*\$\{[^}]+\}.*$"
_ANNOTATIONS = ("title", "description", "default", "examples", "deprecated")


def _allow_references(node: Any) -> Any:
    """Wherever an integer/number/boolean is expected, also accept a string holding a ``${...}`` reference."""
    if isinstance(node, list):
        return [_allow_references(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: _allow_references(value) for key, value in node.items()}
    if out.get("type") in ("integer", "number", "boolean"):
        kept = {k: v for k, v in out.items() if k in _ANNOTATIONS}
        typed = {k: v for k, v in out.items() if k not in _ANNOTATIONS}
        return {**kept, "anyOf": [typed, {"type": "string", "pattern": REFERENCE_PATTERN}]}
    return out


def json_schema() -> dict[str, Any]:
    """The schema of the whole config file (a JSON-serialisable dict)."""
    schema = _allow_references(Settings.model_json_schema(mode="validation"))
    servers = schema["$defs"]["McpConfig"]["properties"]["servers"]
    servers["propertyNames"] = {"pattern": SERVER_ID_RE.pattern}
    schema["title"] = "ava-console configuration"
    return {"$schema": SCHEMA_DIALECT, **schema}


def json_schema_text() -> str:
    """``json_schema()`` as indented JSON text with a trailing newline (what ``--output`` writes)."""
    return json.dumps(json_schema(), indent=2, sort_keys=False) + "\n"
