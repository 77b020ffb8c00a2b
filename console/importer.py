"""Turn Claude Desktop / VS Code MCP JSON into ``mcp.servers`` entries of this app's config.

Claude Desktop: ``{"mcpServers": {name: {command, args, env}}}``; VS Code: ``{"servers": {...}}`` or
``{"mcp": {"servers": {...}}}`` with ``type`` stdio|http|sse, ``url`` and ``headers``. Pure data in, data out.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from engine.config.models import McpServerConfig


class McpImportError(ValueError):
    """The JSON is not a Claude Desktop / VS Code MCP server list (the message says where)."""


def _server_id(raw: str) -> str:
    sid = re.sub(r"_+", "_", re.sub(r"[^a-z0-9_]", "_", raw.strip().lower())).strip("_")
    if not sid:
        raise McpImportError(f"server name {raw!r} has no usable characters for an id")
    if not sid[0].isalpha():
        sid = f"s_{sid}"
    return sid[:32]


def _servers_map(doc: Any) -> Mapping[str, Any]:
    if not isinstance(doc, Mapping):
        raise McpImportError("the top level must be a JSON object")
    for path in (("mcpServers",), ("servers",), ("mcp", "servers")):
        node: Any = doc
        for key in path:
            node = node.get(key) if isinstance(node, Mapping) else None
        if isinstance(node, Mapping):
            return node
    raise McpImportError("no server list found: expected 'mcpServers' (Claude Desktop) or 'servers' (VS Code)")


def convert_entry(name: str, entry: Any) -> dict[str, Any]:
    if not isinstance(entry, Mapping):
        raise McpImportError(f"{name}: each server must be an object")
    kind = str(entry.get("type") or entry.get("transport") or ("http" if entry.get("url") else "stdio"))
    out: dict[str, Any] = {}
    if kind == "stdio":
        command = entry.get("command")
        if not isinstance(command, str) or not command:
            raise McpImportError(f"{name}: a stdio server needs 'command' (a string)")
        args = entry.get("args") or []
        if not isinstance(args, list):
            raise McpImportError(f"{name}: 'args' must be a list")
        out = {"transport": "stdio", "command": [command, *(str(a) for a in args)]}
        if entry.get("env"):
            out["env"] = {str(k): str(v) for k, v in dict(entry["env"]).items()}
        if entry.get("cwd"):
            out["cwd"] = str(entry["cwd"])
    elif kind in ("http", "sse", "streamable-http", "streamableHttp"):
        url = entry.get("url")
        if not isinstance(url, str) or not url:
            raise McpImportError(f"{name}: an {kind} server needs 'url'")
        out = {"transport": "sse" if kind == "sse" else "http", "url": url}
        if entry.get("headers"):
            out["headers"] = {str(k): str(v) for k, v in dict(entry["headers"]).items()}
    else:
        raise McpImportError(f"{name}: unknown server type {kind!r} (stdio, http or sse)")
    try:
        McpServerConfig.model_validate(out)
    except ValueError as e:
        raise McpImportError(f"{name}: {e}") from None
    return out


def parse_mcp_json(text: str, existing: set[str] | None = None) -> dict[str, dict[str, Any]]:
    """``{server_id: server config}``; ids that clash with ``existing`` or each other get a numeric suffix."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as e:
        raise McpImportError(f"not valid JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    taken = set(existing or ())
    out: dict[str, dict[str, Any]] = {}
    for name, entry in _servers_map(doc).items():
        sid = base = _server_id(str(name))
        n = 2
        while sid in taken:
            sid = f"{base[:29]}_{n}"
            n += 1
        taken.add(sid)
        out[sid] = convert_entry(str(name), entry)
    if not out:
        raise McpImportError("the server list is empty")
    return out
