"""The operator's steering on a Gemini Live call, through ``clientContent`` (reference/wire-formats.md §6).

Why it exists: Gemini Live has no "say this" message; what a client can add to a live conversation is content.
A say-now line is a user turn asking the model to say the line word for word (``turnComplete: true``, so it
answers). Sent while the model talks, new content cuts its answer off, so a line is held until the model's turn
is done and sent then ("next", never over it). A whisper is a user turn marked as the operator's note, with
``turnComplete: false``: it joins the context without making the model answer, and steers its next reply. While a
BLOCKING tool call runs, any content would cancel that call on Gemini 3.x (wire-formats §6.4): both wait until the
model's turn after the call's result is done.
``GeminiSteering`` is a mixin of ``GeminiLiveSession`` (kept apart so the session module stays about the socket).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

from engine.providers.base import ProviderError
from engine.providers.realtime.gemini_calls import GeminiCalls
from engine.providers.realtime.gemini_events import EventReader
from engine.providers.realtime.gemini_wire import user_turn
from engine.providers.realtime.socket import RealtimeSocket
from engine.sessions.steering import SteerKind, say_instruction, whisper_note


class _Live(Protocol):
    name: str
    events_in: EventReader
    _sock: RealtimeSocket | None
    _calls: GeminiCalls | None

    @property
    def _says(self) -> deque[str]: ...

    @property
    def _notes(self) -> list[str]: ...

    async def _send(self, msg: dict[str, Any]) -> bool: ...


class GeminiSteering:
    """``steer`` for a Gemini Live session; the session calls ``steered_turn_done`` when the model's turn ends."""

    _held_says: deque[str] | None = None
    _held_notes: list[str] | None = None

    @property
    def _says(self) -> deque[str]:
        if self._held_says is None:
            self._held_says = deque()
        return self._held_says

    @property
    def _notes(self) -> list[str]:
        if self._held_notes is None:
            self._held_notes = []
        return self._held_notes

    async def steer(self: _Live, kind: SteerKind, text: str) -> str:
        if self._sock is None:
            raise ProviderError(self.name, "the conversation is not connected (reconnecting): try again")
        blocking = self._calls is not None and self._calls.blocking
        if kind == "say" and (self.events_in.responding or self._says or blocking):
            self._says.append(text)
            return "clientContent (after the answer in progress)"
        if kind == "whisper" and blocking:
            self._notes.append(text)
            return "clientContent (after the tool call in progress)"
        msg = user_turn(say_instruction(text)) if kind == "say" else user_turn(whisper_note(text), complete=False)
        if not await self._send(msg):
            raise ProviderError(self.name, "the conversation is not connected: clientContent not sent")
        return "clientContent"

    async def steered_turn_done(self: _Live) -> None:
        """The model's turn is over: held whispers, then the next held say-now line go out (one line per turn, in
        order) — unless a BLOCKING call still runs (its result's turn comes first)."""
        if self._sock is None or (self._calls is not None and self._calls.blocking):
            return
        while self._notes:
            await self._send(user_turn(whisper_note(self._notes.pop(0)), complete=False))
        if self._says:
            await self._send(user_turn(say_instruction(self._says.popleft())))
