"""What the caller and the operator said while the operator had a phone call, for the AI that gets it back.

Why it exists: a take-over ends the AI's conversation, and on hand-back a new one starts that would know nothing
of what the caller and the operator agreed. The operator's line already carries the two voices apart: what
Asterisk sends to the operator's media channel is the caller (the bridge holds only the two of them), what the
operator's microphone sends is the operator. So each side is endpointed (VAD) and transcribed with the call's own
speech recogniser (the context's: a scripted brain's expected phrases first, the general model as fallback),
with no diarisation to guess. Each line is published as ``transcript.added`` on the taken-over call with the role
``caller`` or ``operator``; on hand-back the lines become one clearly marked note ("While you were away …") in
the new conversation's history (a system message every adapter renders), after the words of the conversation the
operator took over, and a realtime provider also gets both through its own context mechanism
(``steer("whisper", …)``: a system item, ``UpdatePrompt``, client content, a contextual update) so its next answer
can use them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from engine.events import EventBus, TranscriptAdded
from engine.providers.base import ProviderError
from engine.realtime.call import RealtimeVoiceCall
from engine.sessions.history import HistoryItem, Message
from engine.voice.audio import AudioFrame
from engine.voice.g2p import PronunciationError
from engine.voice.pipeline import VoiceCall, VoiceHost, resolve_voice
from engine.voice.stt import Recognizer, SttUnavailable
from engine.voice.vad import Utterance, VadSegmenter

log = logging.getLogger(__name__)

#: Both sides are fed at the phone's rate (the operator's microphone after its resampling to the line).
LINE_RATE = 8000
#: How long hand-back waits for the last utterances to be transcribed before the AI rejoins without them.
FINISH_TIMEOUT_S = 15.0
ROLES = ("caller", "operator")
#: How many of the earlier conversation's last messages a realtime provider gets back on hand-back.
RECAP_MESSAGES = 12


@dataclass(frozen=True, slots=True)
class SaidLine:
    at: float  # monotonic time the utterance started (orders the two sides)
    role: str  # "caller" | "operator"
    text: str


def handback_note(lines: list[SaidLine]) -> str:
    """The note the AI rejoins with: what each side said, in order, marked as said while it was away."""
    if not lines:
        return (
            "While you were away the operator was on the call with the caller; nothing they said was recognised. "
            "You are back on the call now."
        )
    said = "; ".join(f'the {line.role} said "{line.text}"' for line in lines)
    return (
        f"While you were away the operator took the call over. What was said meanwhile: {said}. "
        "You are back on the call now: continue from there and do not ask again for what was settled."
    )


class TakeoverTranscript:
    """Endpoints and transcribes both sides of a taken-over call; ``finish`` returns what was said."""

    def __init__(self, host: VoiceHost, context: str, bus: EventBus, call_id: str | None) -> None:
        options, phrases = resolve_voice(host, context)
        self.bus, self.call_id = bus, call_id
        self.lines: list[SaidLine] = []
        self._options, self._phrases = options, phrases
        self._segmenters = {
            role: VadSegmenter(LINE_RATE, silence_ms=options.vad_silence_ms, frame_ms=20) for role in ROLES
        }
        self._queue: asyncio.Queue[tuple[str, Utterance, float] | None] = asyncio.Queue()
        self._worker = asyncio.get_running_loop().create_task(self._transcribe(), name=f"handback:{call_id}")

    @classmethod
    def start(cls, host: VoiceHost, context: str, bus: EventBus, call_id: str | None) -> TakeoverTranscript | None:
        """A transcript for a take-over starting now, or None when no endpointer can run here (pocketsphinx
        missing): the operator takes the call over all the same and the AI comes back told nothing was heard."""
        try:
            return cls(host, context, bus, call_id)
        except (ImportError, SttUnavailable) as e:
            log.warning("telephony: no transcript of the take-over of %s: %s", call_id, e)
            return None

    def heard(self, role: str, frame: AudioFrame) -> None:
        """One frame (8 kHz) of what ``role`` said; closed utterances queue for the recogniser."""
        for utt in self._segmenters[role].push(frame):
            self._queue.put_nowait((role, utt, time.monotonic() - utt.audio.duration))

    async def finish(self, within_s: float = FINISH_TIMEOUT_S) -> list[SaidLine]:
        """End both streams, transcribe what is left (up to ``within_s``) and return the lines in order."""
        for role, seg in self._segmenters.items():
            for utt in seg.flush():
                self._queue.put_nowait((role, utt, time.monotonic() - utt.audio.duration))
        self._queue.put_nowait(None)
        try:
            async with asyncio.timeout(within_s):
                await asyncio.shield(self._worker)
        except TimeoutError:
            log.warning(
                "telephony: hand-back of %s: transcription not done in %g s; the AI gets what was ready",
                self.call_id,
                within_s,
            )
        await self.aclose()
        return sorted(self.lines, key=lambda line: line.at)

    async def aclose(self) -> None:
        self._worker.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._worker

    async def _transcribe(self) -> None:
        """Transcribe utterances as they close. A missing recogniser or a failing utterance is logged and
        skipped: the hand-back must never fail for want of a transcript."""
        try:
            recognizer = await asyncio.to_thread(self._recognizer)
        except (SttUnavailable, PronunciationError, OSError) as e:
            log.warning("telephony: no transcript of the take-over of %s: %s", self.call_id, e)
            return
        while (item := await self._queue.get()) is not None:
            role, utt, at = item
            try:
                transcript = await recognizer.transcribe(utt.audio)
            except Exception:  # one bad utterance must not lose the rest
                log.exception("telephony: transcribing the %s during the take-over of %s failed", role, self.call_id)
                continue
            if not transcript.text:
                continue
            self.lines.append(SaidLine(at, role, transcript.text))
            if self.call_id is not None:
                self.bus.publish(TranscriptAdded(call_id=self.call_id, role=role, text=transcript.text))

    def _recognizer(self) -> Recognizer:
        recognizer = Recognizer(user_dictionary=self._options.dictionary)
        if self._phrases:
            recognizer.set_phrases(self._phrases)
        return recognizer


def recap(messages: Sequence[Message], last: int = RECAP_MESSAGES) -> str:
    """The last words of the conversation the operator took over, as one line for a provider's context."""
    if not messages:
        return ""
    said = "; ".join(f'{"the caller" if m.role == "user" else "you"} said "{m.text}"' for m in messages[-last:])
    return f"Earlier in this call, before the operator took it over: {said}. "


async def brief_ai(
    voice: VoiceCall | RealtimeVoiceCall, bus: EventBus, note: str, earlier: Sequence[HistoryItem] = ()
) -> None:
    """Put the hand-back into the AI's new conversation: the words of the conversation the operator took over
    (``earlier``: its messages, before the new greeting; tool rounds stay with the old call, their ids were its
    own), then the note; the call's transcript shows the note (role ``handback``); a realtime provider also gets
    the note through its own context mechanism."""
    session = voice.session
    if session is None:
        return
    history = session.history
    carried = [i for i in earlier if isinstance(i, Message) and i.role != "system" and i.text]
    if carried:
        current = history.items()
        history.restore(0)
        for item in (*carried, *current):
            history.add(item)
    history.add_message("system", note)
    bus.publish(TranscriptAdded(call_id=session.call_id, role="handback", text=note))
    if isinstance(voice, RealtimeVoiceCall) and voice.live is not None:
        try:  # a new realtime session starts empty: it gets the earlier words in the same text
            await voice.live.steer("whisper", f"{recap(carried)}{note}")
        except ProviderError as e:  # the provider has no context channel: the note stays in the history only
            log.info("telephony: %s cannot take the hand-back note as context: %s", session.provider, e)
