"""``open_store``: the store an ``engine.store`` URL names.

Apart from ``engine.store.base`` (the interface) so the interface never imports an implementation; the Redis one
(and the redis library) loads only when a ``redis://`` store is opened.
"""

from __future__ import annotations

from engine.store.base import EventStore


def open_store(url: str, *, timeout_s: float = 2.0) -> EventStore:
    """The store a ``redis://`` or ``rediss://`` ``engine.store`` names (``memory`` means none: nothing is shared)."""
    from engine.store.redis_store import RedisStore  # the redis library loads with the first Redis store

    return RedisStore(url, timeout_s=timeout_s)
