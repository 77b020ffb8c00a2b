"""Exposed tool names for MCP tools: ``mcp_{server_id}_{tool}`` in ``[a-z0-9_]``, at most 64 characters.

Why it exists: providers reject names outside ``[a-zA-Z0-9_-]{1,64}`` (some refuse dots or dashes), two servers may
ship tools that normalise to the same name (server ``my`` tool ``files_read`` and server ``my_files`` tool ``read``
are both ``mcp_my_files_read``), and a server may list ``get-sum`` next to ``get_sum``. Names here are
deterministic: they depend only on who claims what, never on which server came up first or on list order.

The rule: every tool claims a name (its ``expose_as``, else ``mcp_{server}_{tool}`` when that fits in 64
characters). Of all claimants of one name — across every server the host knows, from the config (tools listed
under ``tools:``) and from discovery — the smallest by (``expose_as`` first, server id, raw name already in normal
form first, raw name) keeps it; every other claimant gets the name cut to fit plus an 8-hex hash of (server id, raw
tool name), the same on every run. ``NameBook`` holds the claims of a running host: when a claimant that sorts
first appears later (a lazy server, a re-list), the server that held the name is told to rename its tool, which it
does through the registry (a ``tools.changed`` event), so views refresh and no live call sees a silent rename.
Claims are remembered while a server is down, so names do not flap with restarts; they go when a server leaves
the config. A refresh of a server already listed never takes a name from a tool that did not change: the tools
it adds claim after every claim already made, in the order they came (``get_sum`` added next to a listed
``get-sum`` gets the hashed name, not ``get-sum``'s). An ``expose_as`` claimed twice is a config error
(``engine.config.models.mcp``); at run time a collision never raises.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from engine.config.models import EXPOSED_NAME_RE, McpConfig, McpServerConfig
from engine.config.models.mcp import default_exposed_name, expose_as_conflicts, normalise_name

log = logging.getLogger(__name__)

MAX_NAME = 64
_HASH_LEN = 8


class NamingError(ValueError):
    """An ``expose_as`` that is invalid or claimed twice (a config error naming both places)."""


def normalise(text: str) -> str:
    """Lower-case, every run of characters outside ``[a-z0-9_]`` becomes one ``_``, no edge underscores."""
    return normalise_name(text)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode("utf-8")).hexdigest()[:_HASH_LEN]


def base_name(server_id: str, tool: str) -> str:
    return default_exposed_name(server_id, tool)


def hashed_name(server_id: str, tool: str) -> str:
    """``base`` cut so that ``_`` + an 8-hex hash of (server id, raw tool name) fits in 64 characters."""
    base = base_name(server_id, tool)
    keep = MAX_NAME - _HASH_LEN - 1
    return f"{base[:keep].rstrip('_')}_{_digest(server_id, tool)}"


@dataclass(frozen=True, order=True, slots=True)
class _Claimant:
    """Sorts in the order claimants win a name: tools a refresh added last (in the order they came), then
    ``expose_as`` first, then server id, normal form, raw name."""

    late: int
    generated: bool
    server_id: str
    odd: bool
    tool: str


def _wanted(server_id: str, tool: str, overrides: Mapping[str, str]) -> tuple[str | None, bool]:
    """(the name ``tool`` claims or None when its plain name is too long, whether it is an ``expose_as``)."""
    if tool in overrides:
        return overrides[tool], True
    base = base_name(server_id, tool)
    return (base if len(base) <= MAX_NAME else None), False


Claims = Mapping[str, tuple[Iterable[str], Mapping[str, str]]]


def resolve(claims: Claims) -> dict[str, dict[str, str]]:
    """server id -> (raw tool names, overrides) ⇒ server id -> raw tool name -> exposed name (the rule above)."""
    return _resolve(claims)[0]


def _resolve(
    claims: Claims, late: Mapping[tuple[str, str], int] | None = None
) -> tuple[dict[str, dict[str, str]], dict[str, _Claimant]]:
    wanted: dict[str, dict[str, tuple[str | None, bool]]] = {}
    owner: dict[str, _Claimant] = {}
    for sid, (tools, overrides) in claims.items():
        mine = wanted.setdefault(sid, {})
        for tool in tools:
            name, explicit = mine[tool] = _wanted(sid, tool, overrides)
            if name is None:
                continue
            rank = late.get((sid, tool), 0) if late else 0
            claimant = _Claimant(rank, not explicit, sid, normalise(tool) != tool, tool)
            if name not in owner or claimant < owner[name]:
                owner[name] = claimant
    out: dict[str, dict[str, str]] = {}
    for sid, tools_wanted in wanted.items():
        names = out.setdefault(sid, {})
        for tool, (name, _explicit) in tools_wanted.items():
            won = name is not None and owner[name].server_id == sid and owner[name].tool == tool
            names[tool] = name if won and name is not None else hashed_name(sid, tool)
    return out, owner


def exposed_names(server_id: str, tools: Iterable[str], overrides: Mapping[str, str] | None = None) -> dict[str, str]:
    """Map every raw tool name of one server (alone) to its exposed name; ``overrides`` are tool -> ``expose_as``."""
    raw = list(dict.fromkeys(tools))
    return resolve({server_id: (raw, overrides or {})}).get(server_id, {})


def check_config(mcp: McpConfig) -> None:
    """Every ``expose_as`` must be a valid name, claimed once, not another tool's default; else ``NamingError``.

    The config model already refuses these (with file and line); this is for configs built in code.
    """
    problems: list[str] = []
    for sid, server in mcp.servers.items():
        for i, tool in enumerate(server.tools):
            if tool.expose_as is not None and not EXPOSED_NAME_RE.match(tool.expose_as):
                problems.append(
                    f"mcp.servers.{sid}.tools[{i}].expose_as: {tool.expose_as!r} is not a valid "
                    "exposed name ([a-z0-9_], at most 64)"
                )
    for loc, message in expose_as_conflicts(dict(mcp.servers)):
        path = "mcp." + ".".join(str(p) for p in loc[:3]) + f"[{loc[3]}]." + str(loc[4])
        problems.append(f"{path}: {message}")
    if problems:
        raise NamingError("; ".join(problems))


def _overrides(cfg: McpServerConfig) -> dict[str, str]:
    return {t.name: t.expose_as for t in cfg.tools if t.expose_as}


class NameBook:
    """Every exposed-name claim of a running host, and who wins each (see the module docstring).

    A server's claims are the tools its config lists plus the tools of its last listing. ``claim`` records a new
    listing and returns the other servers whose names changed because of it; those are told (their ``on_change``
    callback) once before the caller registers its tools (so a server losing a name frees it first) and once
    after (``notify``: a server gaining a name the caller just gave up takes it).
    """

    def __init__(self) -> None:
        self._overrides: dict[str, dict[str, str]] = {}
        self._configured: dict[str, list[str]] = {}
        self._listed: dict[str, list[str]] = {}
        self._on_change: dict[str, Callable[[], None]] = {}
        self._names: dict[str, dict[str, str]] = {}
        self._owner: dict[str, _Claimant] = {}
        #: Tools a refresh of an already listed server added, numbered as they came: they sort after every
        #: claimant that was there before them, so a refresh never takes a name from a tool that did not change.
        self._late: dict[tuple[str, str], int] = {}
        self._arrivals = 0

    def _claims(self) -> dict[str, tuple[list[str], dict[str, str]]]:
        return {
            sid: (list(dict.fromkeys([*self._configured.get(sid, []), *self._listed.get(sid, [])])), overrides)
            for sid, overrides in self._overrides.items()
        }

    def _recompute(self, caller: str | None) -> set[str]:
        before = self._names
        self._names, self._owner = _resolve(self._claims(), self._late)
        return {sid for sid, names in self._names.items() if sid != caller and before.get(sid) != names} | {
            sid for sid in before if sid not in self._names and sid != caller
        }

    def configure(self, server_id: str, cfg: McpServerConfig, on_change: Callable[[], None] | None = None) -> None:
        """A server's config claims (its ``tools:`` and their ``expose_as``); the last listing's claims stay."""
        self._overrides[server_id] = _overrides(cfg)
        self._configured[server_id] = [t.name for t in cfg.tools]
        if on_change is not None:
            self._on_change[server_id] = on_change
        self.notify(self._recompute(server_id))

    def forget(self, server_id: str) -> None:
        """The server left the config: its claims go, and servers that now win a name take it."""
        for table in (self._overrides, self._configured, self._listed, self._on_change):
            table.pop(server_id, None)
        self._late = {k: v for k, v in self._late.items() if k[0] != server_id}
        self.notify(self._recompute(server_id))

    def claim(self, server_id: str, tools: Iterable[str]) -> tuple[dict[str, str], set[str]]:
        """Record ``server_id``'s listing; returns its names and the other servers whose names changed.

        The others are told at once (before the caller registers); call ``notify`` with them afterwards.
        """
        listed = list(dict.fromkeys(tools))
        before = self._listed.get(server_id)
        if before is not None:  # a refresh: what it adds comes after every claim already made
            known = {*before, *self._configured.get(server_id, [])}
            for tool in listed:
                if tool not in known and (server_id, tool) not in self._late:
                    self._arrivals += 1
                    self._late[(server_id, tool)] = self._arrivals
        self._late = {k: v for k, v in self._late.items() if k[0] != server_id or k[1] in listed}
        self._listed[server_id] = listed
        self._overrides.setdefault(server_id, {})
        changed = self._recompute(server_id)
        self.notify(changed)
        return dict(self._names.get(server_id, {})), changed

    def names(self, server_id: str) -> dict[str, str]:
        return dict(self._names.get(server_id, {}))

    def collisions(self, server_id: str, tools: Iterable[str]) -> list[str]:
        """Warnings for ``tools`` of ``server_id`` that lost their name to another server's tool."""
        out = []
        overrides = self._overrides.get(server_id, {})
        names = self._names.get(server_id, {})
        for tool in tools:
            wanted, _explicit = _wanted(server_id, tool, overrides)
            owner = self._owner.get(wanted) if wanted is not None else None
            if owner is not None and owner.server_id != server_id and tool in names:
                out.append(
                    f"tool {tool!r} is exposed as {names[tool]!r}: {wanted!r} belongs to tool "
                    f"{owner.tool!r} of server {owner.server_id} (it sorts first)"
                )
        return out

    def preview(self, server_id: str, cfg: McpServerConfig, tools: Iterable[str]) -> dict[str, str]:
        """The names ``tools`` would get on ``server_id`` with ``cfg``, beside every other claim (nothing kept)."""
        claims = self._claims()
        listed = list(dict.fromkeys(tools))
        claims[server_id] = (list(dict.fromkeys([*(t.name for t in cfg.tools), *listed])), _overrides(cfg))
        names = resolve(claims)[server_id]
        return {t: names[t] for t in listed}

    def notify(self, servers: Iterable[str]) -> None:
        for sid in sorted(servers):
            callback = self._on_change.get(sid)
            if callback is None:
                continue
            try:
                callback()
            except Exception as e:  # one server's rename must not stop another's registration
                log.warning("MCP server %s: renaming its tools failed: %s", sid, e)
