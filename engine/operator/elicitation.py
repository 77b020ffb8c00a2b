"""The engine's doors onto the elicitation desk: the operator's answers, the caller's words, and the call's voice.

Why apart from ``engine.elicitation.desk``: the desk sits low (config, events, tools) so the MCP layer can reach
it; speaking to a caller needs the call manager and the providers, which sit above. ``CallVoice`` is that part —
the question said on the call the way the operator's say-now line is (transcript, then the call's voice driver:
the pipeline's TTS, or on a realtime call the provider's own way of talking while a tool runs; never into the
model's history, which is in the middle of a tool call) — and ``ElicitationCommands`` is the public API the
engine's facade forwards to, handed the desk.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.events import TranscriptAdded
from engine.realtime.session import RealtimeSession
from engine.sessions.steering import steering_delivery

if TYPE_CHECKING:
    from engine.elicitation.desk import ElicitationDesk, PendingElicitation
    from engine.events import EventBus
    from engine.operator.steering import LiveCalls


class CallVoice:
    """Says a line to the caller of a live call (the desk's ``CallerVoice``)."""

    def __init__(self, calls: LiveCalls, bus: EventBus) -> None:
        self.calls = calls
        self.bus = bus

    async def say(self, call_id: str, text: str) -> bool:
        session = self.calls.live_session(call_id)
        rt = self.calls.runtime(call_id)
        if session is None or rt is None or not session.active:
            return False
        if rt.deliver is None and isinstance(rt.provider_session, RealtimeSession):
            return False  # a realtime call without a voice driver (nothing would say it, nothing would hear)
        self.bus.publish(TranscriptAdded(call_id=call_id, role="assistant", text=text))
        if rt.deliver is not None:
            with steering_delivery():  # spoken after what plays, not taken for the turn's answer
                await rt.deliver(session, text)
        return True


class ElicitationCommands:
    def __init__(self, desk: ElicitationDesk) -> None:
        self.elicitations = desk

    def pending_elicitations(self) -> list[PendingElicitation]:
        """Tool questions waiting for the operator now, oldest first."""
        return self.elicitations.pending()

    def answer_elicitation(self, elicitation_id: str, action: str, content: dict[str, Any] | None = None) -> None:
        """Answer a tool's question: ``accept`` with ``content`` (checked against its form), ``decline`` or
        ``cancel``. ``ElicitationError`` (a ``ValueError``) naming what is wrong otherwise."""
        self.elicitations.answer(elicitation_id, action, content)

    def attach_elicitation_operator(self, name: str) -> Callable[[], None]:
        """Say an operator is present to answer tool questions (the console does); returns the detach function.
        With none attached, a context whose questions go to the operator has them declined at once."""
        return self.elicitations.attach(name)

    def caller_answered(self, call_id: str, text: str) -> bool:
        """The caller's words while a tool's question waits for them (a voice driver calls this instead of
        starting a turn); False when nothing on that call waits for the caller."""
        return self.elicitations.hear(call_id, text)
