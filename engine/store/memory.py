"""The in-process store (``engine.store: memory``, the default): the same operations as Redis, in this process.

Why it exists: one engine with its console in the same process needs nothing shared, and must need nothing
installed; yet the store component runs the same way whichever store it feeds (batches, order, the entry ids
that make a repeated write a no-op), so the in-process store keeps the same shapes, bounded: streams trimmed to
``maxlen``, keys dropped when their TTL has passed. It never fails, so ``StoreUnavailable`` never comes from here.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Mapping, Sequence
from typing import Any

from engine.store.base import Entry, StoredEvent, call_key, call_stream, engine_key, engine_stream


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, _, n = entry_id.partition("-")
    return int(ms), int(n or 0)


class MemoryStore:
    description = "memory"

    def __init__(self) -> None:
        self._streams: dict[str, deque[Entry]] = {}
        self._values: dict[str, str] = {}
        self._hashes: dict[str, dict[str, str]] = {}
        self._deadlines: dict[str, float] = {}

    async def connect(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def _expire(self) -> None:
        now = time.monotonic()
        for key in [k for k, t in self._deadlines.items() if t <= now]:
            del self._deadlines[key]
            self._values.pop(key, None)
            self._hashes.pop(key, None)
            self._streams.pop(key, None)

    async def last_entry_id(self, engine_id: str) -> str | None:
        self._expire()
        stream = self._streams.get(engine_stream(engine_id))
        return stream[-1][0] if stream else None

    async def register(self, engine_id: str, info: Mapping[str, Any], ttl_s: float, keep_s: float) -> None:
        key = engine_key(engine_id)
        self._values[key] = json.dumps(dict(info))
        self._deadlines[key] = time.monotonic() + ttl_s
        if engine_stream(engine_id) in self._streams:
            self._deadlines[engine_stream(engine_id)] = time.monotonic() + keep_s

    async def unregister(self, engine_id: str) -> None:
        key = engine_key(engine_id)
        self._values.pop(key, None)
        self._deadlines.pop(key, None)

    def _add(self, key: str, event: StoredEvent, maxlen: int) -> None:
        stream = self._streams.setdefault(key, deque(maxlen=maxlen))
        if stream and _id_key(stream[-1][0]) >= _id_key(event.id):
            return  # written before (the same batch again): like Redis, an entry id is never added twice
        stream.append((event.id, event.fields()))

    async def append(self, engine_id: str, events: Sequence[StoredEvent], maxlen: int) -> None:
        self._expire()
        for ev in events:
            self._add(engine_stream(engine_id), ev, maxlen)
            if ev.call_id:
                self._add(call_stream(engine_id, ev.call_id), ev, maxlen)

    async def put_call(self, engine_id: str, call_id: str, state: Mapping[str, str], ttl_s: float) -> None:
        key = call_key(engine_id, call_id)
        self._hashes.setdefault(key, {}).update(state)
        deadline = time.monotonic() + ttl_s
        self._deadlines[key] = deadline
        if call_stream(engine_id, call_id) in self._streams:
            self._deadlines[call_stream(engine_id, call_id)] = deadline

    async def read(self, stream: str, after: str = "0", count: int = 1000) -> list[Entry]:
        self._expire()
        start = _id_key(after)
        out = [(i, dict(f)) for i, f in self._streams.get(stream, ()) if _id_key(i) > start]
        return out[:count]

    async def engines(self) -> dict[str, dict[str, Any]]:
        self._expire()
        prefix = engine_key("")
        return {k[len(prefix) :]: json.loads(v) for k, v in self._values.items() if k.startswith(prefix)}

    async def call_state(self, engine_id: str, call_id: str) -> dict[str, str]:
        self._expire()
        return dict(self._hashes.get(call_key(engine_id, call_id), {}))
