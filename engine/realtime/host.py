"""What a realtime voice call needs from the engine.

Why it exists: the realtime driver must not receive the whole Engine (layers: voice sits below the app), so it
declares the narrow part it uses — the call control of engine/realtime/calls.py, the bus, the flight recorder's
audio tap — as Protocols; the composition root builds one object of parts that satisfies them
(``engine.realtime.voice_host.VoiceParts``). ``is_realtime`` says which driver a context's calls get
(``engine.realtime.driver`` picks it).
Usage: realtime providers report tokens and audio seconds as they go; the driver hands each report to the call's
usage meter (``calls.usage_meter``, engine.usage.meter), as text turns do.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal, Protocol

from engine.realtime.session import AudioSpec, RealtimeProvider, RealtimeSession
from engine.sessions.session import CallError, CallSession
from engine.usage.meter import UsageMeter
from engine.voice.backend import AudioBackend
from engine.voice.call_host import Deliver, VoiceHost


class RealtimeCallControl(Protocol):
    """The CallManager methods a realtime call is driven through (engine/realtime/calls.py)."""

    async def start_realtime_call(
        self,
        context: str,
        *,
        provider: str | None = ...,
        caller_name: str | None = ...,
        caller_number: str | None = ...,
        audio: AudioSpec,
        channel_id: str | None = ...,
        deliver: Deliver | None = ...,
    ) -> tuple[CallSession, RealtimeSession]: ...

    def realtime_record(self, call_id: str, role: Literal["user", "assistant"], text: str) -> None: ...

    async def realtime_push_view(self, call_id: str) -> None: ...

    def usage_meter(self, call_id: str) -> UsageMeter | None: ...

    def budget_wrap_up(self, call_id: str) -> bool: ...


class RealtimeHost(VoiceHost, Protocol):
    """A ``VoiceHost`` that also gives realtime calls their call control, and the voice driver factory the
    recorder's audio tap."""

    @property
    def calls(self) -> RealtimeCallControl: ...

    def record_audio(self, backend: AudioBackend, call_id: Callable[[], str | None]) -> AudioBackend:
        """``backend`` with the call's audio recorded (the flight recorder's tap; as is when it records none)."""
        ...


def is_realtime(host: VoiceHost, context: str, provider: str | None = None) -> bool:
    """Whether a call of ``context`` (on ``provider``, else the context's) runs on a speech-to-speech provider."""
    ctx = host.settings.contexts.get(context)
    if ctx is None:
        raise CallError(f"unknown context {context!r} (known: {', '.join(sorted(host.settings.contexts))})")
    return isinstance(host.providers.get(provider or ctx.provider), RealtimeProvider)
