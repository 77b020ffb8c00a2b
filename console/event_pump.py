"""The console's one event pump: engine bus events into one Textual message per batch.

Leading edge: an event after a quiet spell goes out at once; under load, everything that arrived while the pump
rested goes out together, so the app handles at most one batch per interval (50 live calls do not mean 50 repaints).
An operator's key wakes the pump from its rest: the answer to the key (the tier it set, the tool it switched) is on
screen in the next frame rather than up to one interval later.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from console.messages import EventBatch

if TYPE_CHECKING:  # the console's first frame imports nothing of the engine
    from engine.events import Subscription


class EventPump:
    """Moves a subscription's events into ``post`` in batches, resting ``interval`` seconds between batches."""

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._wake = asyncio.Event()

    def wake(self) -> None:
        """End the current rest: what is queued (or the next event) goes out now."""
        self._wake.set()

    async def run(self, sub: Subscription, post: Callable[[EventBatch], object]) -> None:
        try:
            while not sub.closed:
                first = await sub.get()
                post(EventBatch([first, *sub.drain()], sub.dropped))
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), self.interval)
        except StopAsyncIteration:
            return
