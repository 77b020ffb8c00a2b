"""Textual messages the console's workers post to the app (the event pump's batches, engine start)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # the event classes load with the engine, after the first frame
    from engine.events import Event


class EventBatch(Message):
    """Engine events drained from the bus in one go (the pump posts one of these every ~75 ms at most)."""

    def __init__(self, events: Sequence[Event], dropped: int = 0) -> None:
        super().__init__()
        self.events = list(events)
        self.dropped = dropped


class EngineReady(Message):
    """The engine started (or failed to: ``error`` says why)."""

    def __init__(self, error: str | None = None) -> None:
        super().__init__()
        self.error = error
