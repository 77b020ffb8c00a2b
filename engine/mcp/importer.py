"""Import MCP server definitions from Claude Desktop / Cursor (``mcpServers``) and VS Code (``servers``) JSON.

Why it exists: users already have servers configured in other MCP clients; retyping them is error-prone. Entries
become ``mcp.servers.<id>`` configs (stdio: command/args/env/cwd; http/sse: url/headers), ids normalised to
``[a-z][a-z0-9_]*``, VS Code ``${input:NAME}`` / ``${env:VAR}`` references turned into the config's own
``${keyring:NAME}`` / ``${VAR}``. Merging never overwrites: an id that exists with a different config is a
reported conflict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from engine.mcp.naming import normalise_server_id

_INPUT = re.compile(r"\$\{input:([^}]+)\}")
_ENV = re.compile(r"\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}")


class ImportFormatError(ValueError):
    """The file is not an MCP client config this importer understands."""


@dataclass
class ImportPlan:
    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: original name -> the id it got (only when they differ)
    renamed: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)


def _refs(value: str) -> str:
    value = _INPUT.sub(lambda m: "${keyring:" + m.group(1).strip() + "}", value)
    return _ENV.sub(lambda m: "${" + m.group(1) + "}", value)


def _str_map(raw: Any, where: str, problems: list[str]) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: must be an object of strings; ignored")
        return {}
    return {str(k): _refs(str(v)) for k, v in raw.items()}


def _convert(name: str, entry: Any, problems: list[str]) -> dict[str, Any] | None:
    where = f"server {name!r}"
    if not isinstance(entry, Mapping):
        problems.append(f"{where}: is not an object; skipped")
        return None
    kind = str(entry.get("type", "")).lower()
    if entry.get("command"):
        args = entry.get("args") or []
        if not isinstance(args, list):
            problems.append(f"{where}: 'args' must be a list; skipped")
            return None
        out: dict[str, Any] = {"transport": "stdio", "command": [_refs(str(entry["command"])),
                                                                *(_refs(str(a)) for a in args)]}
        env = _str_map(entry.get("env"), f"{where}.env", problems)
        if env:
            out["env"] = env
        if entry.get("cwd"):
            out["cwd"] = _refs(str(entry["cwd"]))
        if entry.get("envFile"):
            problems.append(f"{where}: 'envFile' is not imported; copy its variables into env")
        return out
    url = entry.get("url") or entry.get("serverUrl")
    if url:
        transport = "sse" if kind == "sse" else "http"
        out = {"transport": transport, "url": _refs(str(url))}
        headers = _str_map(entry.get("headers"), f"{where}.headers", problems)
        if headers:
            out["headers"] = headers
        return out
    problems.append(f"{where}: has neither 'command' nor 'url'; skipped")
    return None


def parse_client_config(text: str, source: str = "<json>") -> ImportPlan:
    """Read a Claude Desktop / Cursor / VS Code MCP config into server configs."""
    try:
        data = json.loads(text)
    except ValueError as e:
        raise ImportFormatError(f"{source}: not valid JSON: {e}") from e
    if not isinstance(data, Mapping):
        raise ImportFormatError(f"{source}: the top level must be an object")
    servers = data.get("mcpServers")
    if servers is None:
        servers = data.get("servers")
    if servers is None and isinstance(data.get("mcp"), Mapping):
        servers = data["mcp"].get("servers")
    if not isinstance(servers, Mapping):
        raise ImportFormatError(
            f"{source}: no 'mcpServers' (Claude Desktop, Cursor) or 'servers' (VS Code) object found"
        )
    plan = ImportPlan()
    for name, entry in servers.items():
        try:
            sid = normalise_server_id(str(name))
        except ValueError as e:
            plan.problems.append(f"server {name!r}: {e}; skipped")
            continue
        if sid in plan.servers:
            plan.problems.append(f"server {name!r}: its id {sid!r} is already used by another entry; skipped")
            continue
        cfg = _convert(str(name), entry, plan.problems)
        if cfg is None:
            continue
        if isinstance(entry, Mapping) and entry.get("disabled") is True:
            cfg["enabled"] = False
        plan.servers[sid] = cfg
        if sid != name:
            plan.renamed[str(name)] = sid
    return plan


def merge_plan(existing: Mapping[str, Any], plan: ImportPlan) -> tuple[dict[str, dict[str, Any]], list[str], list[str]]:
    """(to_add, unchanged, conflicts): ids already configured are never overwritten."""
    to_add: dict[str, dict[str, Any]] = {}
    unchanged: list[str] = []
    conflicts: list[str] = []
    for sid, cfg in plan.servers.items():
        if sid not in existing:
            to_add[sid] = cfg
            continue
        current = existing[sid]
        plain = json.loads(json.dumps(current, default=str)) if current is not None else None
        if plain == cfg:
            unchanged.append(sid)
        else:
            conflicts.append(f"mcp.servers.{sid} already exists with a different config; not overwritten")
    return to_add, unchanged, conflicts
