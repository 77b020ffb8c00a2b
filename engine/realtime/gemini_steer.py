"""The operator's steering on a Gemini Live call, by the text route of the model's family (wire-formats §6).

Why it exists: Gemini Live has no "say this" message; what a client can add to a live conversation is text, sent
the way the model's family takes it (``gemini_families``: ``clientContent`` turns, or ``realtimeInput.text`` on
Gemini 3.1 Live, which closes the socket with 1007 on a mid-call ``clientContent``). A say-now line asks the model
to say the line word for word (a complete turn, so it answers). Sent while the model talks, new input cuts its
answer off, so a line is held until the model's turn is done and sent then ("next", never over it). A whisper is
text marked as the operator's note; as ``clientContent`` with ``turnComplete: false`` it joins the context without
making the model answer and steers its next reply — ``realtimeInput.text`` has no such mark, so there the model may
answer it at once, and the route returned says so. While a BLOCKING tool call runs, any input would cancel that
call on Gemini 3.x (wire-formats §6.4): both wait until the model's turn after the call's result is done.
Announcements for slow tools take the same routes (``announce``, ``say_during_tool``). ``GeminiSteering`` is a mixin
of ``GeminiLiveSession`` (kept apart so the session module stays about the socket).
"""

from __future__ import annotations

from collections import deque
from typing import Protocol

from engine.providers.base import ProviderError
from engine.realtime.gemini_calls import GeminiCalls
from engine.realtime.gemini_events import EventReader
from engine.realtime.gemini_families import Family
from engine.realtime.socket import RealtimeSocket
from engine.sessions.steering import SteerKind, say_instruction, whisper_note


class _Live(Protocol):
    name: str
    family: Family
    events_in: EventReader
    _sock: RealtimeSocket | None
    _calls: GeminiCalls | None

    @property
    def _says(self) -> deque[str]: ...

    @property
    def _notes(self) -> list[str]: ...

    async def _send_text(self, text: str, why: str, *, respond: bool = True) -> bool: ...


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
        route = self.family.text_route
        blocking = self._calls is not None and self._calls.blocking
        if kind == "say" and (self.events_in.responding or self._says or blocking):
            self._says.append(text)
            return f"{route} (after the answer in progress)"
        if kind == "whisper" and blocking:
            self._notes.append(text)
            return f"{route} (after the tool call in progress)"
        if kind == "say":
            sent = await self._send_text(say_instruction(text), "say-now")
        else:
            sent = await self._send_text(whisper_note(text), "whisper", respond=False)
        if not sent:
            raise ProviderError(self.name, f"the conversation is not connected: {route} not sent")
        if kind == "whisper" and route == "realtimeInput":
            return "realtimeInput (caller-side text: the model may answer it now)"
        return route

    async def steered_turn_done(self: _Live) -> None:
        """The model's turn is over: held whispers, then the next held say-now line go out (one line per turn, in
        order) — unless a BLOCKING call still runs (its result's turn comes first)."""
        if self._sock is None or (self._calls is not None and self._calls.blocking):
            return
        while self._notes:
            await self._send_text(whisper_note(self._notes.pop(0)), "whisper", respond=False)
        if self._says:
            await self._send_text(say_instruction(self._says.popleft()), "say-now")

    async def announce(self: _Live, text: str) -> bool:
        """A running NON_BLOCKING call carries the text as an interim ``willContinue`` result scheduled
        ``WHEN_IDLE`` (said once the model's current output is done); with no such call and the model idle, a text
        asks it to say it; otherwise (a BLOCKING call runs — the model waits for it — or someone talks) none."""
        if self._calls is None or self._sock is None:
            return False
        if await self._calls.announce(text):
            return True
        if self._calls.waiting or self.events_in.responding or self.events_in.caller_speaking:
            return False  # a BLOCKING call runs (the model waits for it), or someone is talking: say nothing
        return await self._send_text(f"Tell the caller briefly, in your own voice: {text}", "announcement")

    async def say_during_tool(self: _Live, text: str) -> str | None:
        """An interim result of a running NON_BLOCKING call; None while a BLOCKING one runs (the driver speaks)."""
        if self._calls is not None and self._sock is not None and await self._calls.say(text):
            return "toolResponse (willContinue)"
        return None
