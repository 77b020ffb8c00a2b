"""``VoiceParts``: the host voice calls get (``RealtimeHost``), made of the engine's parts, not the Engine.

Why it exists: the softphone, telephony and the voice driver factory (``engine.realtime.driver.voice_call``) need a
handful of the engine's parts: the live settings and providers, the bus, the call manager, the turn timing book,
the elicitation desk's ear and the flight recorder's audio tap. They used to be handed the whole ``Engine``, through
which any of them could reach every other part. The composition root (``engine.components``) builds this from the
parts themselves and hands it to each of them instead.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # names only: an engine loads the voice stack (numpy) on its first voice call, not when wired
    from engine.calls.turn_timing import TurnTimingBook
    from engine.config.models import Settings
    from engine.events import EventBus
    from engine.providers.base import Provider, TurnReply
    from engine.realtime.host import RealtimeCallControl
    from engine.sessions.session import CallSession
    from engine.voice.backend import AudioBackend
    from engine.voice.call_host import CallCommands, Deliver

    #: The flight recorder's tap: ``backend`` with the audio of the call ``call_id()`` names recorded.
    AudioTap = Callable[[AudioBackend, Callable[[], str | None]], AudioBackend]

    class VoiceCallCommands(RealtimeCallControl, CallCommands, Protocol):
        """The call manager as a voice call uses it: start, a caller turn, end, and the realtime calls' control."""


class VoiceParts:
    """A ``RealtimeHost`` assembled from parts: what a voice call, the softphone and telephony use of the engine."""

    def __init__(
        self,
        *,
        settings: Callable[[], Settings],
        providers: Callable[[], Mapping[str, Provider]],
        calls: VoiceCallCommands,
        bus: EventBus,
        timing_book: TurnTimingBook,
        hear: Callable[[str, str], bool],
        record_audio: AudioTap,
    ) -> None:
        self._settings, self._providers = settings, providers
        self.calls, self.bus, self.timing_book = calls, bus, timing_book
        self._hear, self._record_audio = hear, record_audio

    @property
    def settings(self) -> Settings:
        """The running config (a reload swaps it)."""
        return self._settings()

    @property
    def providers(self) -> Mapping[str, Provider]:
        """The providers by name (a reload rebuilds them)."""
        return self._providers()

    async def start_call(
        self,
        context: str,
        *,
        provider: str | None = None,
        caller_name: str | None = None,
        caller_number: str | None = None,
        deliver: Deliver | None = None,
    ) -> CallSession:
        return await self.calls.start_call(
            context, provider=provider, caller_name=caller_name, caller_number=caller_number, deliver=deliver
        )

    async def user_said(self, call_id: str, text: str) -> TurnReply:
        return await self.calls.user_said(call_id, text)

    async def end_call(self, call_id: str, reason: str = "ended") -> None:
        await self.calls.end_call(call_id, reason)

    def caller_answered(self, call_id: str, text: str) -> bool:
        """The caller's words while a tool's question waits for them; False when nothing on the call waits."""
        return self._hear(call_id, text)

    def record_audio(self, backend: AudioBackend, call_id: Callable[[], str | None]) -> AudioBackend:
        """``backend`` with the call's audio recorded (as is when the recorder records none)."""
        return self._record_audio(backend, call_id)
