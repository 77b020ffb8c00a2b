"""A call's tool view: the tools one call is shown on one turn, and why the others are hidden.

The view is the context's allowlist ∩ the registered tools ∩ the operator's per-call switches ∩ what the call's
latency tier allows (a filter supplied by the budget layer). It is immutable and keyed by everything it depends
on, so it is recomputed only when one of those changes; the execution path checks calls against the view the
model was actually shown.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

from engine.tools.base import ToolDefinition
from engine.tools.registry import RegisteredTool, ToolRegistry


@dataclass(frozen=True, slots=True)
class ToolView:
    """The tools one call is shown (ordered), with a key that changes whenever the view may change."""

    key: tuple[object, ...]
    tools: tuple[RegisteredTool, ...]
    hidden: tuple[tuple[str, str], ...] = ()
    tier: str = "standard"
    names: frozenset[str] = field(default=frozenset())

    @classmethod
    def build(
        cls,
        key: tuple[object, ...],
        tools: Sequence[RegisteredTool],
        hidden: Sequence[tuple[str, str]],
        tier: str,
    ) -> ToolView:
        return cls(key, tuple(tools), tuple(hidden), tier, frozenset(t.name for t in tools))

    def definitions(self) -> list[ToolDefinition]:
        return [t.tool.definition for t in self.tools]

    def declarations(self) -> list[dict[str, object]]:
        return [t.tool.definition.declaration() for t in self.tools]


class TierFilter(Protocol):
    """Orders the allowed tools for a tier and hides those that do not fit; supplied by the budget layer."""

    def __call__(
        self, tools: Sequence[RegisteredTool], tier: str
    ) -> tuple[list[RegisteredTool], list[tuple[str, str]]]: ...

    @property
    def revision(self) -> int: ...


def _is_pattern(entry: str) -> bool:
    return any(c in entry for c in "*?[")


class Allowlist:
    """A context's allowlist: exposed names (a set lookup) and shell-style patterns (``mcp_dice_*``)."""

    def __init__(self, entries: Sequence[str]) -> None:
        self.names = frozenset(e for e in entries if not _is_pattern(e))
        self.patterns = tuple(e for e in entries if _is_pattern(e))

    def __contains__(self, name: object) -> bool:
        if name in self.names:
            return True
        return isinstance(name, str) and any(fnmatch.fnmatchcase(name, p) for p in self.patterns)


@lru_cache(maxsize=256)
def allowlist_of(entries: tuple[str, ...]) -> Allowlist:
    """The parsed allowlist for these entries, built once (views and per-call checks reuse it)."""
    return Allowlist(entries)


def matches_allowlist(name: str, allowlist: Sequence[str]) -> bool:
    return name in allowlist_of(tuple(allowlist))


class ToolViewBuilder:
    """Computes views, caching by (registry revision, context, call revision, tier, filter revision)."""

    def __init__(self, registry: ToolRegistry, tier_filter: TierFilter | None = None, cache_size: int = 512) -> None:
        self.registry = registry
        self.tier_filter = tier_filter
        self._cache: dict[tuple[object, ...], ToolView] = {}
        self._cache_size = cache_size

    def view(
        self,
        allowlist: Sequence[str],
        tier: str,
        overrides: dict[str, bool] | None = None,
        call_revision: int = 0,
        context: str = "",
    ) -> ToolView:
        snap = self.registry.snapshot()
        filt_rev = self.tier_filter.revision if self.tier_filter is not None else 0
        ov = tuple(sorted((overrides or {}).items()))
        key = (snap.revision, context, tuple(allowlist), call_revision, ov, tier, filt_rev)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        view = self._compute(key, snap.tools, allowlist, tier, overrides or {})
        if len(self._cache) >= self._cache_size:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = view
        return view

    def _compute(
        self,
        key: tuple[object, ...],
        tools: dict[str, RegisteredTool] | object,
        allowlist: Sequence[str],
        tier: str,
        overrides: dict[str, bool],
    ) -> ToolView:
        assert isinstance(tools, dict) or hasattr(tools, "items")
        allowed: list[RegisteredTool] = []
        hidden: list[tuple[str, str]] = []
        allow = allowlist_of(tuple(allowlist))
        for name, entry in sorted(tools.items()):
            if name not in allow:
                continue
            if overrides.get(name) is False:
                hidden.append((name, "switched off by the operator"))
                continue
            allowed.append(entry)
        for name in sorted(allow.names):
            if name not in tools:  # type: ignore[operator]
                hidden.append((name, "not available (no such tool registered)"))
        if self.tier_filter is not None:
            allowed, tier_hidden = self.tier_filter(allowed, tier)
            hidden.extend(tier_hidden)
        return ToolView.build(key, allowed, hidden, tier)
