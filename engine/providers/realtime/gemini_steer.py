"""The operator's steering on a Gemini Live call, through ``clientContent`` (reference/wire-formats.md §6).

Why it exists: Gemini Live has no "say this" message; what a client can add to a live conversation is content.
A say-now line is a user turn asking the model to say the line word for word (``turnComplete: true``, so it
answers). Sent while the model talks, new content cuts its answer off, so a line is held until the model's turn
is done and sent then ("next", never over it). A whisper is a user turn marked as the operator's note, with
``turnComplete: false``: it joins the context without making the model answer, and steers its next reply.
``GeminiSteering`` is a mixin of ``GeminiLiveSession`` (kept apart so the session module stays about the socket).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Protocol

from engine.providers.base import ProviderError
from engine.providers.realtime.gemini_events import EventReader
from engine.providers.realtime.gemini_wire import user_turn
from engine.providers.realtime.socket import RealtimeSocket
from engine.sessions.steering import SteerKind, say_instruction, whisper_note


class _Live(Protocol):
    name: str
    events_in: EventReader
    _sock: RealtimeSocket | None

    @property
    def _says(self) -> deque[str]: ...

    async def _send(self, msg: dict[str, Any]) -> bool: ...


class GeminiSteering:
    """``steer`` for a Gemini Live session; the session calls ``steered_turn_done`` when the model's turn ends."""

    _held_says: deque[str] | None = None

    @property
    def _says(self) -> deque[str]:
        if self._held_says is None:
            self._held_says = deque()
        return self._held_says

    async def steer(self: _Live, kind: SteerKind, text: str) -> str:
        if self._sock is None:
            raise ProviderError(self.name, "the conversation is not connected (reconnecting): try again")
        if kind == "say" and (self.events_in.responding or self._says):
            self._says.append(text)
            return "clientContent (after the answer in progress)"
        msg = user_turn(say_instruction(text)) if kind == "say" else user_turn(whisper_note(text), complete=False)
        if not await self._send(msg):
            raise ProviderError(self.name, "the conversation is not connected: clientContent not sent")
        return "clientContent"

    async def steered_turn_done(self: _Live) -> None:
        """The model's turn is over: the next held say-now line goes out (one per turn, in order)."""
        if self._says and self._sock is not None:
            await self._send(user_turn(say_instruction(self._says.popleft())))
