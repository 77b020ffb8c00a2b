"""Exposed tool names for MCP tools: ``mcp_{server_id}_{tool}`` in ``[a-z0-9_]``, at most 64 characters.

Why it exists: providers reject names outside ``[a-zA-Z0-9_-]{1,64}`` (some refuse dots or dashes), two servers may
ship tools with the same name, and a server may list ``get-sum`` next to ``get_sum``. Names here are deterministic:
the same server id and tool name always give the same exposed name (across restarts and list orders), over-long and
colliding names get a short stable hash suffix, and ``expose_as`` overrides are checked for validity and
uniqueness with an error naming both claimants. Nothing is ever silently overwritten.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from engine.config.models import EXPOSED_NAME_RE, McpConfig

MAX_NAME = 64
_HASH_LEN = 8
_BAD = re.compile(r"[^a-z0-9_]+")
_UNDERSCORES = re.compile(r"_+")


class NamingError(ValueError):
    """An ``expose_as`` that is invalid or claimed twice (a config error naming both places)."""


def normalise(text: str) -> str:
    """Lower-case, every run of characters outside ``[a-z0-9_]`` becomes one ``_``, no edge underscores."""
    out = _UNDERSCORES.sub("_", _BAD.sub("_", text.strip().lower())).strip("_")
    return out or "tool"


def normalise_server_id(raw: str) -> str:
    """A server id from free text (imported configs): ``[a-z][a-z0-9_]*``, at most 32 characters."""
    sid = normalise(raw)
    if sid == "tool" and not raw.strip():
        raise ValueError("an empty server name cannot become a server id")
    if not sid[0].isalpha():
        sid = f"s_{sid}"
    if len(sid) > 32:
        sid = f"{sid[:23]}_{_digest(raw)}"
    return sid


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:_HASH_LEN]


def base_name(server_id: str, tool: str) -> str:
    return f"mcp_{server_id}_{normalise(tool)}"


def hashed_name(server_id: str, tool: str) -> str:
    """``base`` cut so that ``_`` + an 8-hex hash of (server id, raw tool name) fits in 64 characters."""
    base = base_name(server_id, tool)
    keep = MAX_NAME - _HASH_LEN - 1
    return f"{base[:keep].rstrip('_')}_{_digest(server_id, tool)}"


def exposed_names(server_id: str, tools: Iterable[str], overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Map every raw tool name of one server to its exposed name.

    A tool keeps the plain ``mcp_{server}_{tool}`` when that fits in 64 characters and no other tool of the server
    normalises to the same name, or when it is the one whose raw name is already in normal form; the others get
    the hashed form. ``overrides`` (tool -> ``expose_as``) win and are checked by ``check_config``.
    """
    overrides = overrides or {}
    raw = list(dict.fromkeys(tools))
    claimed = {overrides[t] for t in raw if t in overrides}
    groups: dict[str, int] = {}
    for tool in raw:
        if tool not in overrides:
            base = base_name(server_id, tool)
            groups[base] = groups.get(base, 0) + 1
    out: dict[str, str] = {}
    for tool in raw:
        if tool in overrides:
            out[tool] = overrides[tool]
            continue
        base = base_name(server_id, tool)
        plain_ok = len(base) <= MAX_NAME and (groups[base] == 1 or normalise(tool) == tool) and base not in claimed
        out[tool] = base if plain_ok else hashed_name(server_id, tool)
    return out


@dataclass(frozen=True, slots=True)
class Claim:
    name: str
    where: str


def check_config(mcp: McpConfig) -> None:
    """Every ``expose_as`` must be a valid name and claimed once across all servers, else ``NamingError``."""
    seen: dict[str, Claim] = {}
    problems: list[str] = []
    for sid, server in mcp.servers.items():
        for i, tool in enumerate(server.tools):
            if tool.expose_as is None:
                continue
            where = f"mcp.servers.{sid}.tools[{i}].expose_as"
            if not EXPOSED_NAME_RE.match(tool.expose_as):
                problems.append(f"{where}: {tool.expose_as!r} is not a valid exposed name ([a-z0-9_], at most 64)")
                continue
            prior = seen.get(tool.expose_as)
            if prior is not None:
                problems.append(f"{where}: {tool.expose_as!r} is already claimed by {prior.where}")
            else:
                seen[tool.expose_as] = Claim(tool.expose_as, where)
    if problems:
        raise NamingError("; ".join(problems))
