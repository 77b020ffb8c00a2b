"""Live steering: the operator makes the agent say a line next, or whispers it a hidden instruction for its next turn.

Why it exists: a game master voicing NPCs, or a supervisor on a line, has to nudge a conversation while it runs,
without taking it over. Both commands go through the call's provider in that provider's own way:

- text and pipeline calls (OpenAI, Anthropic, Gemini, Ollama, scripted, the offline voice pipeline): ``say_now``
  records the line in the canonical history as the agent's words (so every later request carries it), publishes
  ``transcript.added`` and, on a voice call, speaks it through the call's TTS after whatever is playing; a
  ``whisper`` waits on the call and is added to the system prompt of the next turn's requests only, never said,
  never in the history the model sees again;
- realtime calls (OpenAI Realtime, Gemini Live, Deepgram Voice Agent, ElevenLabs Agents): the adapter's ``steer``
  sends its protocol's message (``RealtimeSession.steer``); what the agent then says comes back as its transcript.

Every action is kept on the call (``CallSession.steering``) and published as ``steering.injected`` (whispers
``hidden``), so the console's transcript and timeline and the flight recorder see it; the bus redacts it like every
event; ``ai_agent_steering_total{kind}`` counts them. ``Steering`` is the part the engine's facade forwards
``say_now`` and ``whisper`` to; it is handed the live calls (``LiveCalls``), the bus and the metrics.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from engine.events import SteeringInjected, TranscriptAdded
from engine.realtime.session import RealtimeSession
from engine.sessions.session import CallError
from engine.sessions.steering import MAX_STEER_CHARS, SteerKind, SteerNote, clean_steer_text, steering_delivery

if TYPE_CHECKING:
    from engine.calls.runtime import CallRuntime
    from engine.core.metrics import Metrics
    from engine.events import EventBus
    from engine.sessions.session import CallSession


class LiveCalls(Protocol):
    """What steering (and a tool's question said on a call) needs of the call manager: a live call's session and
    runtime, or None when there is no such live call."""

    def live_session(self, call_id: str) -> CallSession | None: ...

    def runtime(self, call_id: str) -> CallRuntime | None: ...


class Steering:
    """``say_now`` and ``whisper`` on a live call."""

    #: The longest say-now line or whisper (characters); UIs size their input by it.
    max_chars = MAX_STEER_CHARS

    def __init__(self, calls: LiveCalls, bus: EventBus, metrics: Metrics) -> None:
        self.calls = calls
        self.bus = bus
        self.metrics = metrics

    async def say_now(self, call_id: str, text: str) -> str:
        """Make the agent of a live call say ``text`` next: spoken after what it is saying now (TTS on a voice
        call, the next assistant text on a text call, the provider's own voice on a realtime call) and kept as the
        agent's words. Returns how it reached the provider. ``CallError`` for an unknown or ended call,
        ``ValueError`` for an empty or too long text, ``ProviderError`` when a realtime provider refuses."""
        return await self._steer(call_id, "say", text)

    async def whisper(self, call_id: str, text: str) -> str:
        """Give the agent of a live call a hidden instruction for its next turn (a game master's whisper to an
        NPC): the caller never hears it; it is kept on the call and published as a hidden ``steering.injected``.
        Returns how it reached the provider; errors as ``say_now``."""
        return await self._steer(call_id, "whisper", text)

    async def _steer(self, call_id: str, kind: SteerKind, text: str) -> str:
        cleaned = clean_steer_text(kind, text)
        session, rt = self._steerable(call_id)
        live = rt.provider_session
        if isinstance(live, RealtimeSession):
            via = await live.steer(kind, cleaned)
        elif kind == "whisper":
            session.whispers.append(cleaned)
            via = "system prompt of the next turn"
        else:
            via = "tts" if rt.deliver is not None else "text"
        session.steering.append(SteerNote(kind, cleaned, session.turn, via))
        self.metrics.steering_total.labels(kind).inc()
        self.bus.publish(
            SteeringInjected(
                call_id=call_id, kind=kind, text=cleaned, via=via, hidden=kind == "whisper", turn=session.turn
            )
        )
        if kind == "say" and not isinstance(live, RealtimeSession):
            await self._say_line(session, rt, cleaned)
        return via

    def _steerable(self, call_id: str) -> tuple[CallSession, CallRuntime]:
        if not isinstance(call_id, str) or not call_id:
            raise CallError("no call to steer: select a live call first")
        session = self.calls.live_session(call_id)
        rt = self.calls.runtime(call_id)
        if session is None or rt is None:
            raise CallError(f"no live call {call_id!r} to steer (it has ended, or never existed)")
        if not session.active:
            raise CallError(f"call {call_id} has ended: it can no longer be steered")
        return session, rt

    async def _say_line(self, session: CallSession, rt: CallRuntime, text: str) -> None:
        """The line as the agent's words: in the history (later requests carry it), on the transcript, and spoken
        on a voice call after whatever is playing (the driver knows it is the operator's, not the turn's answer)."""
        session.history.add_message("assistant", text)
        self.bus.publish(TranscriptAdded(call_id=session.call_id, role="assistant", text=text))
        if rt.deliver is not None:
            with steering_delivery():
                await rt.deliver(session, text)
