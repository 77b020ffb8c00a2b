"""What a voice call needs from the engine and what it reports, shared by the pipeline and realtime drivers.

``VoiceHost`` is the engine as a voice call sees it, ``CallState``/``TurnStats`` are what both drivers report, and
``resolve_voice`` picks a call's voice settings and expected phrases. They live apart from ``engine.voice.pipeline``
so a driver can name them without the pipeline's STT/TTS machinery (and to keep that module one job).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from engine.calls.turn_timing import TurnTimingBook
from engine.config.models import Settings
from engine.events import EventBus
from engine.providers.base import Provider, TurnReply
from engine.providers.pipeline import PipelineProvider, bind_pipelines, provider_phrases
from engine.sessions.session import CallError, CallSession
from engine.usage.meter import UsageMeter
from engine.voice.options import VoiceOptions

#: How the engine hands a call's assistant utterances to the voice side (``start_call(deliver=…)``).
Deliver = Callable[[CallSession, str], Awaitable[None]]


class CallMeters(Protocol):
    """The call manager as a voice call sees it: where a call's usage (its CPU seconds) is counted."""

    def usage_meter(self, call_id: str) -> UsageMeter | None: ...


class CallCommands(Protocol):
    """The call commands a voice call runs on: start, a caller turn, end (the call manager's, which the
    ``VoiceHost`` passes on)."""

    async def start_call(
        self,
        context: str,
        *,
        provider: str | None = ...,
        caller_name: str | None = ...,
        caller_number: str | None = ...,
        deliver: Deliver | None = ...,
    ) -> CallSession: ...

    async def user_said(self, call_id: str, text: str) -> TurnReply: ...

    async def end_call(self, call_id: str, reason: str = ...) -> None: ...


class VoiceHost(CallCommands, Protocol):
    """What a voice call needs from the engine: its settings, providers, bus and usage meters, the call commands,
    and the ear for a tool's question to the caller."""

    @property
    def settings(self) -> Settings: ...

    @property
    def providers(self) -> Mapping[str, Provider]: ...

    @property
    def bus(self) -> EventBus: ...

    @property
    def calls(self) -> CallMeters: ...

    @property
    def timing_book(self) -> TurnTimingBook:
        """Each turn's stage times (``turn.timings``, the latency waterfall), fed by the drivers."""
        ...

    def caller_answered(self, call_id: str, text: str) -> bool:
        """The caller's words while a tool's question waits for them (engine.voice.asking); False when none waits."""
        ...


class CallState(StrEnum):
    STARTING = "starting"
    LISTENING = "listening"
    HEARING = "hearing"  # the caller is talking
    THINKING = "thinking"  # transcribing or answering
    SPEAKING = "speaking"
    ENDED = "ended"


@dataclass
class TurnStats:
    """One utterance: what was heard, how long STT took, and when the answer's first sample went out."""

    text: str
    source: str  # "grammar" | "lm" | "none"
    audio_s: float
    stt_s: float
    utterance_end: float  # time.perf_counter() when the endpointer closed the utterance
    first_audio: float | None = None

    @property
    def latency_ms(self) -> float | None:
        return None if self.first_audio is None else 1000.0 * (self.first_audio - self.utterance_end)

    @property
    def stt_rtf(self) -> float:
        return self.stt_s / self.audio_s if self.audio_s else 0.0


def resolve_voice(
    engine: VoiceHost, context: str, provider: str | None = None
) -> tuple[VoiceOptions, list[str] | None]:
    """Voice settings and expected phrases for a call of ``context`` (CallError for an unknown name)."""
    bind_pipelines(engine.providers)
    ctx = engine.settings.contexts.get(context)
    if ctx is None:
        raise CallError(f"unknown context {context!r} (known: {', '.join(sorted(engine.settings.contexts))})")
    prov = engine.providers.get(provider or ctx.provider)
    if prov is None:
        raise CallError(f"unknown provider {provider or ctx.provider!r}")
    softphone = engine.settings.softphone
    if isinstance(prov, PipelineProvider):
        opts = prov.voice_options(softphone)
    else:
        opts = VoiceOptions.from_softphone(softphone)
    return opts, provider_phrases(prov)
