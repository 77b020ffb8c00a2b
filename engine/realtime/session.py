"""The audio-native provider interface: a speech-to-speech session takes caller audio and yields events.

Why it exists: the text interface (``ProviderSession.run_turn``) answers one typed user message at a time; the
realtime providers (OpenAI Realtime, Gemini Live, Deepgram Voice Agent, ElevenLabs Agents) hold one socket for the
whole call, hear the caller's audio themselves, decide when a turn ends and answer with audio. A
``RealtimeSession`` is that shape: ``start`` connects and sends the provider's setup, ``send_audio`` streams the
caller's frames, ``events()`` yields what the provider did (assistant audio, transcripts of both sides, speech
started/stopped, turn done, usage, notices). Tool calls never leave the adapter as events to execute elsewhere:
the adapter runs them through the ``ToolGateway`` it was given (the engine's one execution path: allowlist,
validation, timeout, events, metrics) and answers the provider in the provider's own protocol.

The voice driver (softphone, ``ava-engine call --audio-in``, the telephony bridge) chooses between the cascaded
pipeline and a realtime session from the context's provider, and treats every realtime adapter the same way.
"""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from engine.providers.base import Provider, ProviderError, ProviderSession, ToolGateway, Turn, TurnReply
from engine.sessions.session import CallSession
from engine.sessions.steering import SteerKind
from engine.usage.report import UsageReport  # re-exported: realtime adapters report usage as every provider does

if TYPE_CHECKING:
    from engine.tools.view import ToolView

AudioEncoding = Literal["pcm16", "pcmu", "pcma"]


@dataclass(frozen=True, slots=True)
class AudioSpec:
    """One audio format on a wire: mono, ``pcm16`` (signed 16-bit little-endian) or G.711 ``pcmu``/``pcma``."""

    encoding: AudioEncoding
    rate: int

    @property
    def bytes_per_sample(self) -> int:
        return 2 if self.encoding == "pcm16" else 1

    def bytes_for_ms(self, ms: float) -> int:
        return round(self.rate * ms / 1000.0) * self.bytes_per_sample

    def duration_ms(self, nbytes: int) -> float:
        return 1000.0 * nbytes / (self.rate * self.bytes_per_sample)

    def __str__(self) -> str:
        return f"{self.encoding}/{self.rate}"


#: Telephony's native format (Asterisk ``ulaw``): 8 kHz μ-law, 160 bytes per 20 ms.
PCMU_8K = AudioSpec("pcmu", 8000)
PCMA_8K = AudioSpec("pcma", 8000)
PCM16_8K = AudioSpec("pcm16", 8000)
PCM16_16K = AudioSpec("pcm16", 16000)
PCM16_24K = AudioSpec("pcm16", 24000)


# ------------------------------------------------------------------------------------------------- events out


@dataclass(frozen=True, slots=True)
class AssistantAudio:
    """A piece of the assistant's speech in the session's ``output_spec``; ``item_id`` names the utterance
    (OpenAI item id, ElevenLabs event id …) so a barge-in can report how much of it was heard."""

    data: bytes
    item_id: str | None = None


@dataclass(frozen=True, slots=True)
class AssistantText:
    """What the assistant says, as text: ``final`` once per utterance with the whole text (deltas before it)."""

    text: str
    final: bool = True
    item_id: str | None = None


@dataclass(frozen=True, slots=True)
class CallerText:
    """What the provider heard the caller say: ``final`` once per caller turn with the whole text."""

    text: str
    final: bool = True


@dataclass(frozen=True, slots=True)
class CallerSpeechStarted:
    """The provider detected the caller speaking: a barge-in when the assistant is talking (flush the playout)."""


@dataclass(frozen=True, slots=True)
class CallerSpeechStopped:
    """The provider detected the end of the caller's speech."""


@dataclass(frozen=True, slots=True)
class AssistantInterrupted:
    """The provider itself says its output was cut off (Gemini ``interrupted``, ElevenLabs ``interruption``):
    drop queued audio of ``item_id`` (or all queued audio when None)."""

    item_id: str | None = None


@dataclass(frozen=True, slots=True)
class ResponseDone:
    """One assistant response finished (``status`` as the provider said: completed, cancelled, failed …)."""

    status: str = "completed"


@dataclass(frozen=True, slots=True)
class ProviderNotice:
    """Something the operator should know: a provider warning or error (never carrying a secret), a reconnect.

    ``fatal`` ends the call with ``message`` as the reason."""

    message: str
    fatal: bool = False
    code: str | None = None


RealtimeEvent = (
    AssistantAudio
    | AssistantText
    | CallerText
    | CallerSpeechStarted
    | CallerSpeechStopped
    | AssistantInterrupted
    | ResponseDone
    | UsageReport
    | ProviderNotice
)


# ------------------------------------------------------------------------------------------------- session


@dataclass(slots=True)
class RealtimeSetup:
    """What a session needs to start: the call, its instructions and tool view, the gateway, the formats."""

    session: CallSession
    instructions: str
    view: ToolView
    tools: ToolGateway
    #: The context's greeting, for the provider to speak first (None: the provider's own, or none).
    greeting: str | None
    #: The driver's native audio format (``PCMU_8K`` on the phone, ``PCM16_16K`` on the softphone); the adapter
    #: picks the provider format closest to it so μ-law goes straight through where the provider accepts it.
    audio: AudioSpec


class RealtimeSession(ProviderSession):
    """One call's live socket to a speech-to-speech provider.

    ``input_spec``/``output_spec`` are the formats ``send_audio`` takes and ``AssistantAudio`` carries, fixed by
    ``start`` (the driver converts between them and its own format with ``engine.realtime.audio``).
    """

    input_spec: AudioSpec
    output_spec: AudioSpec

    @abstractmethod
    async def start(self, setup: RealtimeSetup) -> None:
        """Connect, send the provider's setup (instructions, tools, formats, VAD, greeting) and wait until it is
        accepted; raises ``ProviderError`` with the provider's reason (auth, model, quota) — never the key."""

    @abstractmethod
    async def send_audio(self, audio: bytes) -> None:
        """Caller audio in ``input_spec`` (any length; 20 ms frames on the phone)."""

    @abstractmethod
    def events(self) -> AsyncIterator[RealtimeEvent]:
        """Everything the provider does, in order, until the session closes (then the iterator ends)."""

    @abstractmethod
    async def update_tools(self, view: ToolView, *, apply_now: bool = False) -> None:
        """The call's tool view changed. ``apply_now``: the response in flight should be redone with the new
        tools (cancel and re-create where the provider allows it); otherwise from the next turn on. The adapter
        updates ``session.shown_tools`` only once the provider has the new tools."""

    async def played(self, item_id: str | None, played_ms: float) -> None:
        """Barge-in report: of utterance ``item_id`` only ``played_ms`` reached the caller (OpenAI truncates the
        item so the transcript matches what was heard). Default: nothing to tell."""
        return None

    async def announce(self, text: str) -> bool:
        """Say ``text`` (a slow-tool announcement) through the provider's own mechanism without talking over
        the model; False when the provider has none (the driver then stays quiet)."""
        return False

    async def steer(self, kind: SteerKind, text: str) -> str:
        """The operator steers the live conversation: ``say`` makes the agent say ``text`` next (after what it is
        saying now), ``whisper`` gives it a hidden instruction for its next turn; each through the provider's own
        mechanism. Returns how it went (the protocol message, for the event and the log); ``ProviderError`` when
        this provider has no way to do it or the conversation is not connected."""
        raise ProviderError(type(self).__name__, f"this realtime provider cannot be steered ({kind})")

    async def say_during_tool(self, text: str) -> str | None:
        """Say ``text`` (a tool's question to the caller, its read-back, the give-up line) while a function call
        of this session waits for its result, without breaking that call's result later. Returns how (the
        protocol message), or None when the provider has no such way (then the voice driver says it with the
        engine's own voice). Default: None."""
        return None

    async def run_turn(self, turn: Turn) -> TurnReply:
        """A typed user message on a realtime session is not supported unless the adapter overrides it."""
        raise ProviderError(type(self).__name__, "this realtime provider takes audio only (use --audio-in)")

    async def aclose(self) -> None:
        """Close the socket; ``events()`` ends. Closing twice does nothing."""
        return None


class RealtimeProvider(Provider):
    """A configured speech-to-speech provider; ``open_session`` returns a ``RealtimeSession``."""

    @abstractmethod
    def open_session(self, session: CallSession) -> RealtimeSession: ...

    def supported_formats(self) -> Sequence[AudioSpec]:
        """The formats this provider accepts for caller audio, preferred first (used to negotiate)."""
        return (PCM16_16K,)
