"""The registry of every tool the engine can run, keyed by exposed name, with a revision number.

Registration is thread-safe (MCP discovery and reloads run concurrently with calls), every change bumps the
revision so per-call tool views and provider declarations know when to re-render, and snapshots are immutable so
a call keeps exactly the tools it was shown while the registry changes under it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from engine.tools.base import Tool
from engine.tools.validation import ArgumentValidator, validator_for


class ToolNameConflict(ValueError):
    """Two tools claim the same exposed name."""


@dataclass(frozen=True, slots=True)
class RegisteredTool:
    tool: Tool
    validator: ArgumentValidator

    @property
    def name(self) -> str:
        return self.tool.definition.name


@dataclass(frozen=True, slots=True)
class RegistrySnapshot:
    revision: int
    tools: Mapping[str, RegisteredTool]


class ToolRegistry:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._tools: dict[str, RegisteredTool] = {}
        self._revision = 0
        self._snapshot = RegistrySnapshot(0, MappingProxyType({}))

    @property
    def revision(self) -> int:
        return self._revision

    def register(self, tool: Tool, *, replace: bool = False) -> None:
        entry = RegisteredTool(tool, validator_for(tool.definition.schema()))
        with self._lock:
            existing = self._tools.get(tool.name)
            if existing is not None and not replace and existing.tool is not tool:
                raise ToolNameConflict(
                    f"tool name {tool.name!r} is already registered by {existing.tool.definition.server}"
                )
            self._tools[tool.name] = entry
            self._bump()

    def unregister(self, name: str) -> bool:
        with self._lock:
            if self._tools.pop(name, None) is None:
                return False
            self._bump()
            return True

    def replace_group(self, server: str, tools: Iterable[Tool]) -> tuple[list[str], list[str]]:
        """Atomically swap every tool of one server for a new set; returns (added, removed) names."""
        new = {t.name: RegisteredTool(t, validator_for(t.definition.schema())) for t in tools}
        with self._lock:
            for name in new:
                other = self._tools.get(name)
                if other is not None and other.tool.definition.server != server:
                    raise ToolNameConflict(
                        f"tool name {name!r} from {server} is already registered by {other.tool.definition.server}"
                    )
            old = {n for n, e in self._tools.items() if e.tool.definition.server == server}
            for n in old:
                del self._tools[n]
            self._tools.update(new)
            added = sorted(set(new) - old)
            removed = sorted(old - set(new))
            if added or removed or old:
                self._bump()
            return added, removed

    def get(self, name: str) -> RegisteredTool | None:
        return self._tools.get(name)

    def names(self) -> list[str]:
        return sorted(self._tools)

    def by_server(self, server: str) -> list[RegisteredTool]:
        return [e for e in self._tools.values() if e.tool.definition.server == server]

    def snapshot(self) -> RegistrySnapshot:
        return self._snapshot

    def _bump(self) -> None:
        self._revision += 1
        self._snapshot = RegistrySnapshot(self._revision, MappingProxyType(dict(self._tools)))
