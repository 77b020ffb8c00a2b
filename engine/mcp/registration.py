"""Which names one MCP server's tools are registered under, and keeping them registered as names move.

Why it exists: the supervisor owns a server's lifecycle; this part (an object the supervisor holds, not a mixin
sharing its ``self``) owns its tools in the registry. A listing is claimed in the host's ``NameBook`` (which
settles collisions across servers), built into ``MCPTool``s and swapped into the registry as one group, with a
``tools.changed`` event when anything changed; when another server's claims move one of this server's names, the
same path re-registers the last listing under the new names.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import mcp.types as types

from engine.config.models import McpServerConfig
from engine.events import ToolsChanged
from engine.mcp.host_services import HostServices
from engine.mcp.tool import MCPTool, ToolHost, build_tools, exposable
from engine.tools.registry import ToolNameConflict

log = logging.getLogger("engine.mcp.supervisor")


class ToolRegistration:
    """The tools of one server in the registry: a part ``Supervisor`` holds, given its id, its current config,
    the host's services and the ``ToolHost`` its tools call through (the supervisor)."""

    def __init__(
        self, server_id: str, cfg: Callable[[], McpServerConfig], services: HostServices, host: ToolHost
    ) -> None:
        self.server_id = server_id
        #: The server's config as it is now (the operator's enable switch replaces the supervisor's).
        self._cfg = cfg
        self._services = services
        self._host = host
        self.tools: list[MCPTool] = []
        self.warnings: list[str] = []
        #: The server's last tool listing (renames after another server's claims changed rebuild from it).
        self._listed: list[types.Tool] = []

    def _register(self, tools: list[MCPTool], warnings: list[str]) -> None:
        for w in warnings:
            if w not in self.warnings:  # a re-list or a rename repeats the same warnings: log each once
                log.warning("MCP server %s: %s", self.server_id, w)
        self.warnings = warnings
        old = {t.name: t for t in self.tools}
        if len(old) == len(tools) and all(t.name in old and old[t.name].same_as(t) for t in tools):
            for t in tools:  # same declarations: keep the registered objects (nothing for providers to redo)
                old[t.name].supervisor = self._host
            return
        try:
            added, removed = self._services.registry.replace_group(self.server_id, tools)
        except ToolNameConflict as e:
            self.warnings.append(str(e))
            log.error("MCP server %s: %s", self.server_id, e)
            return
        self.tools = tools
        changed = [t.name for t in tools if t.name in old and not old[t.name].same_as(t)]
        if added or removed or changed:
            self._services.bus.publish(
                ToolsChanged(
                    revision=self._services.registry.revision,
                    added=tuple(added),
                    removed=tuple(removed),
                )
            )

    def adopt(self, listed: list[types.Tool]) -> None:
        """Claim the listing's names (other servers that lose or win a name rename around us), then register."""
        self._listed = listed
        cfg = self._cfg()
        unique, _warnings = exposable(cfg, listed)
        raw = [t.name for t in unique]
        names, changed = self._services.names.claim(self.server_id, raw)
        tools, warnings = build_tools(self.server_id, cfg, listed, self._host, self._taken, names)
        self._register(tools, [*self._services.names.collisions(self.server_id, raw), *warnings])
        self._services.names.notify(changed)  # a server winning a name we just gave up takes it now

    def names_changed(self) -> None:
        """Another server's claims moved some of our names: re-register under the new ones (``tools.changed``)."""
        if self.tools and self._listed:
            self.adopt(self._listed)

    def unregister(self) -> None:
        if not self.tools:
            return
        _added, removed = self._services.registry.replace_group(self.server_id, [])
        self.tools = []
        self._services.bus.publish(ToolsChanged(revision=self._services.registry.revision, removed=tuple(removed)))

    def _taken(self, name: str) -> bool:
        entry = self._services.registry.get(name)
        return entry is not None and entry.tool.definition.server != self.server_id
