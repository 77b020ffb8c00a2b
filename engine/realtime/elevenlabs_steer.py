"""The operator's steering on an ElevenLabs Agents call, with the client events the SDK's ``conversation.py`` sends.

Why it exists: an ElevenLabs conversation takes two kinds of client text (reference/wire-formats.md §8.5, SDK
``ClientToOrchestratorEvent``): ``contextual_update`` — "non-interrupting content … to update the conversation
state without directly prompting the agent", exactly a whisper — and ``user_message``, a typed turn the agent
answers at once. The socket has no "say this" event, so a say-now line is a ``user_message`` asking the agent to
say the line word for word, marked as the operator's. ``ElevenLabsSteering`` is a part the session holds (kept
apart so the session module stays about the conversation socket), given the live conversation's socket.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from engine.providers.base import ProviderError
from engine.sessions.steering import SteerKind, say_instruction, whisper_note


def steering_event(kind: SteerKind, text: str) -> dict[str, Any]:
    """The client event for one steering action (``{"type", "text"}``, as the SDK builds them)."""
    if kind == "say":
        return {"type": "user_message", "text": f"(The operator, not the caller:) {say_instruction(text)}"}
    return {"type": "contextual_update", "text": whisper_note(text)}


class Socket(Protocol):
    """The live conversation's socket (``RealtimeSocket`` is one)."""

    @property
    def closed(self) -> bool: ...

    async def send_json(self, message: Mapping[str, Any]) -> None: ...


class ElevenLabsSteering:
    """``steer`` for an ElevenLabs session, on its live conversation's socket (None between conversations)."""

    def __init__(self, name: str, socket: Callable[[], Socket | None]) -> None:
        self.name = name
        self._socket = socket

    async def steer(self, kind: SteerKind, text: str) -> str:
        sock = self._socket()
        if sock is None or sock.closed:
            raise ProviderError(self.name, "the conversation is not connected (reconnecting): try again")
        event = steering_event(kind, text)
        try:
            await sock.send_json(event)
        except Exception as e:  # closing under us: the reader sees it and reconnects
            raise ProviderError(self.name, f"{event['type']} not sent: {type(e).__name__}") from e
        return str(event["type"])

    async def say_during_tool(self, text: str) -> str:
        """A tool's question while its client tool call waits: the say-now ``user_message`` (the socket has no
        other way to make the agent talk); the ``client_tool_result`` follows on the same socket as usual."""
        return await self.steer("say", text)
