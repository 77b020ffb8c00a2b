"""The operator's steering on an ElevenLabs Agents call, with the client events the SDK's ``conversation.py`` sends.

Why it exists: an ElevenLabs conversation takes two kinds of client text (reference/wire-formats.md §8.5, SDK
``ClientToOrchestratorEvent``): ``contextual_update`` — "non-interrupting content … to update the conversation
state without directly prompting the agent", exactly a whisper — and ``user_message``, a typed turn the agent
answers at once. The socket has no "say this" event, so a say-now line is a ``user_message`` asking the agent to
say the line word for word, marked as the operator's. ``ElevenLabsSteering`` is a mixin of the session (kept apart
so the session module stays about the conversation socket).
"""

from __future__ import annotations

from typing import Any, Protocol

from engine.providers.base import ProviderError
from engine.realtime.socket import RealtimeSocket
from engine.sessions.steering import SteerKind, say_instruction, whisper_note


def steering_event(kind: SteerKind, text: str) -> dict[str, Any]:
    """The client event for one steering action (``{"type", "text"}``, as the SDK builds them)."""
    if kind == "say":
        return {"type": "user_message", "text": f"(The operator, not the caller:) {say_instruction(text)}"}
    return {"type": "contextual_update", "text": whisper_note(text)}


class _Conn(Protocol):
    @property
    def sock(self) -> RealtimeSocket: ...


class _Named(Protocol):
    @property
    def name(self) -> str: ...


class _Live(Protocol):
    @property
    def p(self) -> _Named: ...

    @property
    def _conn(self) -> _Conn | None: ...


class _Steerable(Protocol):
    async def steer(self, kind: SteerKind, text: str) -> str: ...


class ElevenLabsSteering:
    """``steer`` for an ElevenLabs session, on its live conversation's socket."""

    async def steer(self: _Live, kind: SteerKind, text: str) -> str:
        conn = self._conn
        if conn is None or conn.sock.closed:
            raise ProviderError(self.p.name, "the conversation is not connected (reconnecting): try again")
        event = steering_event(kind, text)
        try:
            await conn.sock.send_json(event)
        except Exception as e:  # closing under us: the reader sees it and reconnects
            raise ProviderError(self.p.name, f"{event['type']} not sent: {type(e).__name__}") from e
        return str(event["type"])

    async def say_during_tool(self: _Steerable, text: str) -> str:
        """A tool's question while its client tool call waits: the say-now ``user_message`` (the socket has no
        other way to make the agent talk); the ``client_tool_result`` follows on the same socket as usual."""
        return await self.steer("say", text)
