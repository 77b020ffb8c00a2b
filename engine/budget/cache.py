"""The result cache for idempotent tools that declare ``cacheable_seconds``: bounded LRU with a per-entry TTL.

Keys are the exposed name and the canonical arguments (JSON with sorted keys), so ``{"a":1,"b":2}`` and
``{"b":2,"a":1}`` share an entry. Only successful results are kept; a hit comes back as a copy marked
``cache_hit=True`` so ``tool.completed`` says where it came from. The clock is injectable for tests.
"""

from __future__ import annotations

import dataclasses
import json
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

from engine.tools.base import ToolDefinition, ToolResult


def canonical_args(args: Mapping[str, Any]) -> str:
    return json.dumps(args, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def cacheable(d: ToolDefinition) -> bool:
    return d.latency.idempotent and d.latency.cacheable_seconds > 0


class ResultCache:
    def __init__(self, size: int, clock: Callable[[], float]) -> None:
        if size < 0:
            raise ValueError(f"cache size must be >= 0, got {size}")
        self.size = size
        self.clock = clock
        self._items: OrderedDict[tuple[str, str], tuple[float, ToolResult]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def get(self, d: ToolDefinition, args: Mapping[str, Any]) -> ToolResult | None:
        if not cacheable(d) or self.size == 0:
            return None
        key = (d.name, canonical_args(args))
        item = self._items.get(key)
        if item is None:
            self.misses += 1
            return None
        expires, result = item
        if self.clock() >= expires:
            del self._items[key]
            self.misses += 1
            return None
        self._items.move_to_end(key)
        self.hits += 1
        return dataclasses.replace(result, cache_hit=True)

    def put(self, d: ToolDefinition, args: Mapping[str, Any], result: ToolResult) -> bool:
        if not cacheable(d) or self.size == 0 or result.status != "success" or result.cache_hit:
            return False
        key = (d.name, canonical_args(args))
        self._items[key] = (self.clock() + d.latency.cacheable_seconds, dataclasses.replace(result))
        self._items.move_to_end(key)
        while len(self._items) > self.size:
            self._items.popitem(last=False)
        return True

    def resize(self, size: int) -> None:
        self.size = size
        while len(self._items) > size:
            self._items.popitem(last=False)

    def drop_tool(self, name: str) -> int:
        keys = [k for k in self._items if k[0] == name]
        for k in keys:
            del self._items[k]
        return len(keys)

    def __len__(self) -> int:
        return len(self._items)
