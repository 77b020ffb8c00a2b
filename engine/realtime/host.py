"""What a realtime voice call needs from the engine.

Why it exists: the realtime driver must not receive the whole Engine (layers: voice sits below the app), so it
declares the narrow part it uses — the call control of engine/realtime/calls.py, the bus, the metrics — as
Protocols the Engine satisfies; ``voice_call`` picks the driver (pipeline or realtime) from the context.
Usage: realtime providers report tokens and audio seconds as they go; the driver hands each report to the call's
usage meter (``calls.usage_meter``, engine.usage.meter), as text turns do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

from engine.core.metrics import Metrics
from engine.realtime.session import AudioSpec, RealtimeProvider, RealtimeSession
from engine.sessions.session import CallError, CallSession
from engine.usage.meter import UsageMeter
from engine.voice.backend import AudioBackend
from engine.voice.pipeline import Deliver, VoiceCall, VoiceHost

if TYPE_CHECKING:
    from engine.realtime.call import RealtimeVoiceCall


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
    """A ``VoiceHost`` that also gives realtime calls their call control and metrics."""

    @property
    def calls(self) -> RealtimeCallControl: ...

    @property
    def metrics(self) -> Metrics: ...


def is_realtime(engine: VoiceHost, context: str, provider: str | None = None) -> bool:
    """Whether a call of ``context`` (on ``provider``, else the context's) runs on a speech-to-speech provider."""
    ctx = engine.settings.contexts.get(context)
    if ctx is None:
        raise CallError(f"unknown context {context!r} (known: {', '.join(sorted(engine.settings.contexts))})")
    return isinstance(engine.providers.get(provider or ctx.provider), RealtimeProvider)


def voice_call(engine: RealtimeHost, backend: AudioBackend, context: str, **kw: Any) -> VoiceCall | RealtimeVoiceCall:
    """The voice driver for a call of ``context``: speech-to-speech when its provider is a realtime one, else the
    cascaded pipeline (``kw`` as either takes: provider, caller_name, caller_number, on_state, on_level …)."""
    record = getattr(engine, "record_audio", None)  # the flight recorder's tap (engine.recorder.desk), if any
    made: list[VoiceCall | RealtimeVoiceCall] = []
    if record is not None:
        backend = record(backend, lambda: made[0].call_id if made else None)
    call: VoiceCall | RealtimeVoiceCall
    if is_realtime(engine, context, kw.get("provider")):
        from engine.realtime.call import RealtimeVoiceCall  # it imports this module

        kw.pop("recognizer", None)  # the provider hears the caller itself
        kw.pop("synthesizer", None)
        call = RealtimeVoiceCall(engine, backend, context, **kw)
    else:
        call = VoiceCall(engine, backend, context, **kw)
    made.append(call)
    return call
