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
Announcements for slow tools take the same routes (``announce``, ``say_during_tool``). ``GeminiSteering`` is a part
``GeminiLiveSession`` holds (kept apart so the session module stays about the socket), given what it reads of the
session: whether it is connected, its tool calls, who is talking, and how to send it a text.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol

from engine.providers.base import ProviderError
from engine.realtime.gemini_families import TextRoute
from engine.sessions.steering import SteerKind, say_instruction, whisper_note


class Talk(Protocol):
    """Who is talking on the call (the session's ``EventReader`` is one)."""

    @property
    def responding(self) -> bool: ...

    @property
    def caller_speaking(self) -> bool: ...


class ToolCalls(Protocol):
    """The call's running function calls (``GeminiCalls`` is one)."""

    @property
    def waiting(self) -> bool: ...

    @property
    def blocking(self) -> bool: ...

    async def announce(self, text: str) -> bool: ...

    async def say(self, text: str) -> bool: ...


class SendText(Protocol):
    """Sends a text to the model by its family's route; False when there is no open connection."""

    def __call__(self, text: str, why: str, *, respond: bool = True) -> Awaitable[bool]: ...


class GeminiSteering:
    """``steer`` for a Gemini Live session; the session calls ``turn_done`` when the model's turn ends."""

    def __init__(
        self,
        name: str,
        route: TextRoute,
        talk: Talk,
        *,
        connected: Callable[[], bool],
        calls: Callable[[], ToolCalls | None],
        send_text: SendText,
    ) -> None:
        self.name = name
        self.route = route
        self.talk = talk
        self._connected = connected
        self._calls = calls
        self._send_text = send_text
        self._says: deque[str] = deque()
        self._notes: list[str] = []

    def _blocking(self) -> bool:
        calls = self._calls()
        return calls is not None and calls.blocking

    async def steer(self, kind: SteerKind, text: str) -> str:
        if not self._connected():
            raise ProviderError(self.name, "the conversation is not connected (reconnecting): try again")
        route = self.route
        blocking = self._blocking()
        if kind == "say" and (self.talk.responding or self._says or blocking):
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

    async def turn_done(self) -> None:
        """The model's turn is over: held whispers, then the next held say-now line go out (one line per turn, in
        order) — unless a BLOCKING call still runs (its result's turn comes first)."""
        if not self._connected() or self._blocking():
            return
        while self._notes:
            await self._send_text(whisper_note(self._notes.pop(0)), "whisper", respond=False)
        if self._says:
            await self._send_text(say_instruction(self._says.popleft()), "say-now")

    async def announce(self, text: str) -> bool:
        """A running NON_BLOCKING call carries the text as an interim ``willContinue`` result scheduled
        ``WHEN_IDLE`` (said once the model's current output is done); with no such call and the model idle, a text
        asks it to say it; otherwise (a BLOCKING call runs — the model waits for it — or someone talks) none."""
        calls = self._calls()
        if calls is None or not self._connected():
            return False
        if await calls.announce(text):
            return True
        if calls.waiting or self.talk.responding or self.talk.caller_speaking:
            return False  # a BLOCKING call runs (the model waits for it), or someone is talking: say nothing
        return await self._send_text(f"Tell the caller briefly, in your own voice: {text}", "announcement")

    async def say_during_tool(self, text: str) -> str | None:
        """An interim result of a running NON_BLOCKING call; None while a BLOCKING one runs (the driver speaks)."""
        calls = self._calls()
        if calls is not None and self._connected() and await calls.say(text):
            return "toolResponse (willContinue)"
        return None
