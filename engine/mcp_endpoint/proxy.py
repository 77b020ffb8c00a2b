"""Resources, resource templates, prompts and completion of the MCP servers behind the engine, served by its endpoint.

Why it exists: an agent connected to the engine's endpoint should reach what the engine's MCP servers offer, not
only their tools. Each request goes to the servers that are up and declare the capability (in ``mcp.servers``
order), through their live connection (``Connection.ask``: a server that dies mid-request ends the request).

Names are spaced per server so a client can tell servers apart and a request finds its way back:

* a prompt is listed as ``{server}_{prompt}`` (like tools' exposed names, without normalising) and routed back by
  that name;
* a resource keeps its URI — the URIs inside tool results, resource links and embedded resources, then read as
  they are — with ``{server}_{name}`` as its name and the server id under ``_meta["io.ava/server"]``. A URI two
  servers both list goes to the first; the other's copy is listed as ``ava://{server}/{uri}``, a form every read
  and subscription accepts for any server. A URI no listing names goes to the server whose template matches it,
  else (after one fresh listing) it is not found: ``-32602`` with the URI in ``data`` (SEP-2164).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from mcp import Client, MCPError
from mcp.types import (
    INVALID_PARAMS,
    CompleteRequestParams,
    CompleteResult,
    Completion,
    GetPromptRequestParams,
    GetPromptResult,
    InputRequiredResult,
    Prompt,
    PromptReference,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
)

from engine.mcp.connection import MAX_PAGES, ServerGone, describe

if TYPE_CHECKING:
    from engine.mcp.connection import Connection
    from engine.mcp.supervisor import Supervisor

log = logging.getLogger(__name__)

SERVER_META = "io.ava/server"
WRAP = "ava://"
T = TypeVar("T")


class Upstream(Protocol):
    """The MCP host (``engine.mcp.host.McpHost``), as much of it as the endpoint reads."""

    supervisors: dict[str, Supervisor]


def not_found(uri: str) -> MCPError:
    return MCPError(INVALID_PARAMS, f"Resource not found: {uri}", {"uri": uri})


def template_pattern(template: str) -> re.Pattern[str]:
    """An RFC 6570 template as a regex: ``{x}`` one path segment, ``{+x}`` / ``{#x}`` / others anything."""
    out, pos = [], 0
    for m in re.finditer(r"\{([^}]*)\}", template):
        out.append(re.escape(template[pos : m.start()]))
        out.append("[^/?#]+" if m[1][:1].isalnum() or m[1][:1] == "_" else ".*")
        pos = m.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out))


class Catalog:
    """What the servers behind list, remembered from the last listing (refreshed on every list and on a miss)."""

    def __init__(
        self, upstream: Callable[[], Upstream | None], shared: Callable[[str], bool] = lambda _sid: False
    ) -> None:
        self._upstream = upstream
        #: Whether a server's resources, prompts and completion are served (``engine.mcp_server.share``).
        self._shared = shared
        self._uris: dict[str, tuple[str, str]] = {}  # exposed URI -> (server, the server's URI)
        self._templates: list[tuple[re.Pattern[str], str, str]] = []  # (pattern, template, server)
        self._prompts: dict[str, tuple[str, str]] = {}  # exposed name -> (server, the server's name)

    # ------------------------------------------------------------------------------------------ servers

    def connections(self, capability: str) -> dict[str, Connection]:
        """Servers that are up and declare ``capability`` (``resources``, ``prompts``, ``completions``)."""
        host = self._upstream()
        out: dict[str, Connection] = {}
        for sid, s in (host.supervisors if host is not None else {}).items():
            conn = s.conn
            if s.state != "up" or conn is None or conn.client is None or not self._shared(sid):
                continue
            if getattr(conn.client.server_capabilities, capability, None) is not None:
                out[sid] = conn
        return out

    async def _each(
        self, capability: str, fetch: Callable[[Connection], Awaitable[list[T]]]
    ) -> list[tuple[str, list[T]]]:
        """``fetch`` on every server with ``capability`` at once; a server that fails is left out (and logged)."""
        conns = self.connections(capability)

        async def one(sid: str, conn: Connection) -> list[T]:
            try:
                async with asyncio.timeout(conn.cfg.connect_timeout_ms / 1000):
                    return await fetch(conn)
            except (TimeoutError, ServerGone, MCPError) as e:
                log.warning("MCP server %s: listing its %s for the endpoint failed: %s", sid, capability, describe(e))
                return []

        got = await asyncio.gather(*(one(sid, c) for sid, c in conns.items()))
        return list(zip(conns, got, strict=True))

    @staticmethod
    async def _pages(conn: Connection, page: Callable[[Client, str | None], Awaitable[Any]], key: str) -> list[Any]:
        items: list[Any] = []
        cursor: str | None = None
        seen: set[str] = set()
        for _ in range(MAX_PAGES):
            result = await conn.ask(lambda c, cur=cursor: page(c, cur))  # type: ignore[misc]
            items.extend(getattr(result, key))
            cursor = result.next_cursor
            if cursor is None or cursor in seen:
                break
            seen.add(cursor)
        return items

    async def ask(self, capability: str, sid: str, request: Callable[[Client], Awaitable[T]]) -> T:
        conn = self.connections(capability).get(sid)
        if conn is None:
            raise MCPError(INVALID_PARAMS, f"MCP server {sid!r} is not up (or offers no {capability})")
        try:
            return await conn.ask(request)
        except ServerGone as e:
            raise MCPError(INVALID_PARAMS, str(e)) from e

    # ------------------------------------------------------------------------------------------ resources

    async def resources(self) -> list[Resource]:
        listed = await self._each(
            "resources", lambda conn: self._pages(conn, lambda c, cur: c.list_resources(cursor=cur), "resources")
        )
        uris: dict[str, tuple[str, str]] = {}
        out: list[Resource] = []
        for sid, items in listed:
            for r in items:
                uri = str(r.uri)
                exposed = uri if uri not in uris else f"{WRAP}{sid}/{uri}"
                uris[exposed] = (sid, uri)
                out.append(r.model_copy(update={"uri": exposed, "name": f"{sid}_{r.name}", "meta": _meta(r.meta, sid)}))
        self._uris = uris
        return out

    async def templates(self) -> list[ResourceTemplate]:
        listed = await self._each(
            "resources",
            lambda conn: self._pages(conn, lambda c, cur: c.list_resource_templates(cursor=cur), "resource_templates"),
        )
        self._templates = [(template_pattern(t.uri_template), t.uri_template, sid) for sid, ts in listed for t in ts]
        return [
            t.model_copy(update={"name": f"{sid}_{t.name}", "meta": _meta(t.meta, sid)})
            for sid, ts in listed
            for t in ts
        ]

    def _route(self, uri: str) -> tuple[str, str] | None:
        if uri.startswith(WRAP):
            sid, _, rest = uri[len(WRAP) :].partition("/")
            host = self._upstream()
            if host is not None and sid in host.supervisors and rest and self._shared(sid):
                return sid, rest
        if uri in self._uris:
            return self._uris[uri]
        for pattern, _template, sid in self._templates:
            if pattern.fullmatch(uri):
                return sid, uri
        return None

    async def route(self, uri: str) -> tuple[str, str]:
        """(server, the server's URI) for an exposed URI; a fresh listing first when none names it."""
        found = self._route(uri)
        if found is None:
            await asyncio.gather(self.resources(), self.templates())
            found = self._route(uri)
        if found is None:
            raise not_found(uri)
        return found

    async def read(self, uri: str) -> ReadResourceResult:
        sid, theirs = await self.route(uri)
        try:
            result = await self.ask("resources", sid, lambda c: c.read_resource(theirs, cache_mode="bypass"))
        except MCPError as e:
            if e.code in (INVALID_PARAMS, -32002):  # -32002: the 2025 "resource not found" code
                raise not_found(uri) from e
            raise
        if theirs != uri:  # read as ava://server/uri: the contents say so too
            contents = [c.model_copy(update={"uri": uri}) if str(c.uri) == theirs else c for c in result.contents]
            result = result.model_copy(update={"contents": contents})
        return result

    # ------------------------------------------------------------------------------------------ prompts

    async def prompts(self) -> list[Prompt]:
        listed = await self._each(
            "prompts", lambda conn: self._pages(conn, lambda c, cur: c.list_prompts(cursor=cur), "prompts")
        )
        names: dict[str, tuple[str, str]] = {}
        out: list[Prompt] = []
        for sid, items in listed:
            for p in items:
                exposed = f"{sid}_{p.name}"
                if exposed in names:  # server "a" prompt "b_c" and server "a_b" prompt "c": the first keeps it
                    log.warning(
                        "MCP endpoint: prompt %s of server %s hidden (name taken by %s)", p.name, sid, names[exposed][0]
                    )
                    continue
                names[exposed] = (sid, p.name)
                out.append(p.model_copy(update={"name": exposed, "meta": _meta(p.meta, sid)}))
        self._prompts = names
        return out

    async def prompt_route(self, name: str) -> tuple[str, str]:
        if name not in self._prompts:
            await self.prompts()
        if name not in self._prompts:
            raise MCPError(
                INVALID_PARAMS, f"Unknown prompt: {name!r} is not offered by any MCP server behind this endpoint"
            )
        return self._prompts[name]

    async def get_prompt(
        self, params: GetPromptRequestParams, asking: bool = False
    ) -> GetPromptResult | InputRequiredResult:
        """The server's prompt; ``asking``: sent with the client's answers and state (a 2026 client, who answers the
        server's question itself: an ``InputRequiredResult`` comes back as it is, for ``engine.mcp_endpoint.mrtr``)."""
        sid, theirs = await self.prompt_route(params.name)
        args = dict(params.arguments or {})
        conn = self.connections("prompts").get(sid)
        if not asking or conn is None or not conn.modern:
            return await self.ask("prompts", sid, lambda c: c.get_prompt(theirs, args))
        answers, state = params.input_responses, params.request_state
        return await self.ask(
            "prompts",
            sid,
            lambda c: c.session.get_prompt(
                theirs, args, input_responses=answers, request_state=state, allow_input_required=True
            ),
        )

    # ------------------------------------------------------------------------------------------ completion

    async def complete(self, params: CompleteRequestParams) -> CompleteResult:
        ref = params.ref
        if isinstance(ref, PromptReference):
            sid, theirs = await self.prompt_route(ref.name)
            ref = ref.model_copy(update={"name": theirs})
        else:
            owner = [s for _p, template, s in self._templates if template == ref.uri]
            if not owner:
                await self.templates()
                owner = [s for _p, template, s in self._templates if template == ref.uri]
            if not owner:
                raise MCPError(INVALID_PARAMS, f"Unknown resource template: {ref.uri!r}")
            sid = owner[0]
        if sid not in self.connections("completions"):
            return CompleteResult(completion=Completion(values=[]))  # the server completes nothing: no suggestions
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = dict(params.context.arguments or {}) if params.context is not None else None
        return await self.ask("completions", sid, lambda c: c.complete(ref, argument, context))


def _meta(meta: Mapping[str, Any] | None, sid: str) -> dict[str, Any]:
    return {**(meta or {}), SERVER_META: sid}
