"""The state-and-events store: where an engine's heartbeat, events and live call state go (issue 19).

Why it exists: one engine per box carries a few dozen calls; several headless engines and one console need a
shared place for what each engine does. ``engine.store: memory`` (the default) keeps it in this process;
``redis://…`` / ``rediss://…`` puts it in Redis (Streams per engine and per call, a hash per live call, a
heartbeat key per engine) so consoles on other machines can follow. ``base`` is the interface and the key
layout, ``memory`` and ``redis`` the two implementations, ``component`` the engine component that feeds them.
"""

from engine.store.base import EventStore, StoredEvent, StoreUnavailable
from engine.store.opening import open_store

__all__ = ["EventStore", "StoreUnavailable", "StoredEvent", "open_store"]
