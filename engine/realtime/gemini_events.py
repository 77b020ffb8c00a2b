"""Gemini Live server messages → realtime events: audio, transcripts of both sides, turns, usage, tool calls.

Why it exists: reading the server side is a translation with its own state (which response is playing, the
transcript deltas of both sides so far, audio seconds since the last usage report), kept apart from the socket
and reconnect logic. ``read`` never raises on content it does not understand: an unknown message is logged
with the provider's name and ignored; a malformed part raises ``TypeError``/``ValueError`` for the session to
log and skip.

Mapping (reference/wire-formats.md §6): ``serverContent.modelTurn`` inline PCM → ``AssistantAudio``;
``outputTranscription``/``inputTranscription`` → ``AssistantText``/``CallerText`` (deltas, then one final text
per turn); ``interrupted`` → ``AssistantInterrupted``; ``turnComplete`` → ``ResponseDone``; ``usageMetadata`` →
``UsageReport`` (each report's tokens taken as that response's, plus the audio seconds sent and received since
the previous report); ``voiceActivity`` (sent when the server's VAD signals are on) → ``CallerSpeechStarted`` /
``CallerSpeechStopped``. Gemini reports no end of the caller's speech otherwise, so the caller's turn ending
(the model answers or calls a tool after transcribing the caller) reports it, once, before the caller's final
text: the voice driver knows from it that an answer is owed.
"""

from __future__ import annotations

import base64
import binascii
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from engine.realtime.session import (
    PCM16_24K,
    AssistantAudio,
    AssistantInterrupted,
    AssistantText,
    CallerSpeechStarted,
    CallerSpeechStopped,
    CallerText,
    RealtimeEvent,
    ResponseDone,
)
from engine.realtime.socket import BadFrame
from engine.usage.report import gemini as gemini_usage

log = logging.getLogger(__name__)

KNOWN = frozenset(
    {
        "setupComplete",
        "serverContent",
        "toolCall",
        "toolCallCancellation",
        "goAway",
        "sessionResumptionUpdate",
        "usageMetadata",
        "voiceActivity",
        "voiceActivityDetectionSignal",
    }
)


@dataclass(frozen=True, slots=True)
class FunctionCall:
    id: str
    name: str
    args: Any
    non_blocking: bool


class EventReader:
    """Translates one session's server messages (across reconnects) into ``RealtimeEvent``s."""

    def __init__(
        self,
        provider: str,
        emit: Callable[[RealtimeEvent], None],
        unhandled: Callable[[object, str], None] | None = None,
    ) -> None:
        self.provider = provider
        self._emit = emit
        #: A server message of a kind this adapter does not handle: counted, logged once per kind.
        self._unhandled = unhandled
        self.responding = False
        #: Set by ``read`` when the message completed a turn; ``cancelled`` lists ids it cancelled.
        self.turn_done = False
        self.cancelled: list[Any] = []
        #: Caller audio sent so far (ms, counted by the session in its negotiated format); assistant audio (bytes).
        self.audio_in_ms = 0.0
        self.audio_out_bytes = 0
        self._reported_in = 0.0
        self._reported_out = 0
        self._caller: list[str] = []
        self._agent: list[str] = []
        self._response = 1
        self._interrupted = False
        #: The caller is speaking (heard, or the server's activity start) and no speech end was reported yet.
        self._speaking = False

    @property
    def caller_speaking(self) -> bool:
        """The caller's turn is open (heard or signalled, not yet answered)."""
        return self._speaking

    @property
    def item_id(self) -> str:
        """Gemini names no utterances; responses are numbered per session."""
        return f"gemini-{self._response}"

    def unexpected(self, msg: dict[str, Any] | bytes | BadFrame, when: str) -> None:
        what = msg.reason if isinstance(msg, BadFrame) else type(msg).__name__
        if isinstance(msg, dict):
            what = "message with keys " + ", ".join(sorted(str(k) for k in msg)[:8])
        log.warning("%s: ignored a %s %s", self.provider, what, when or "from Gemini Live")

    def read(self, msg: Mapping[str, Any], behaviour: Mapping[str, bool]) -> list[FunctionCall]:
        """Emit the events of one server message; returns the function calls it asks for."""
        self.turn_done = False
        self.cancelled = []
        if not KNOWN.intersection(msg):
            if self._unhandled is None:
                self.unexpected(dict(msg), "(unknown to this adapter)")
            else:
                self._unhandled("+".join(sorted(str(k) for k in msg)[:4]) or "(empty)", "message")
            return []
        calls: list[FunctionCall] = []
        if "serverContent" in msg:
            self._content(msg["serverContent"])
        if "toolCall" in msg:
            calls = self._tool_call(msg["toolCall"], behaviour)
        if "toolCallCancellation" in msg:
            ids = _object(msg["toolCallCancellation"], "toolCallCancellation").get("ids") or []
            if not isinstance(ids, list):
                raise TypeError("toolCallCancellation.ids is not a list")
            self.cancelled = ids
        if "usageMetadata" in msg:
            self._usage(_object(msg["usageMetadata"], "usageMetadata"))
        if "voiceActivity" in msg:
            kind = _object(msg["voiceActivity"], "voiceActivity").get("voiceActivityType")
            if kind == "ACTIVITY_START":
                self._speaking = True
                self._emit(CallerSpeechStarted())
            elif kind == "ACTIVITY_END":
                self._speech_ended()
        return calls

    # -------------------------------------------------------------------------------------------- parts

    def _content(self, raw: Any) -> None:
        sc = _object(raw, "serverContent")
        heard = sc.get("inputTranscription")
        if isinstance(heard, dict) and isinstance(heard.get("text"), str) and heard["text"]:
            self._speaking = True
            self._caller.append(heard["text"])
            self._emit(CallerText(heard["text"], final=False))
        turn = sc.get("modelTurn")
        if turn is not None:
            for part in _object(turn, "modelTurn").get("parts") or []:
                self._part(_object(part, "modelTurn.parts[]"))
        said = sc.get("outputTranscription")
        if isinstance(said, dict) and isinstance(said.get("text"), str) and said["text"]:
            self._started()
            self._agent.append(said["text"])
            self._emit(AssistantText(said["text"], final=False, item_id=self.item_id))
        if sc.get("interrupted") is True:
            self._interrupt()
        if sc.get("turnComplete") is True:
            self._flush_caller()
            self._flush_agent()
            self._emit(ResponseDone("interrupted" if self._interrupted else "completed"))
            self.responding = False
            self._interrupted = False
            self._response += 1
            self.turn_done = True

    def _part(self, part: Mapping[str, Any]) -> None:
        blob = part.get("inlineData")
        if blob is None:
            return  # text or thought parts: the transcription carries what was said
        blob = _object(blob, "inlineData")
        mime = str(blob.get("mimeType", ""))
        if not mime.startswith("audio/pcm"):
            log.info("%s: ignored inline data of type %r", self.provider, mime[:60])
            return
        if "rate=" in mime and f"rate={PCM16_24K.rate}" not in mime:
            log.warning("%s: audio at %r, expected 24 kHz; played as 24 kHz", self.provider, mime[:60])
        try:
            data = base64.b64decode(str(blob.get("data", "")), validate=True)
        except (binascii.Error, ValueError) as e:
            raise ValueError(f"inlineData.data is not base64: {e}") from None
        if data:
            self._started()
            self.audio_out_bytes += len(data)
            self._emit(AssistantAudio(data, self.item_id))

    def _started(self) -> None:
        if not self.responding:
            self._flush_caller()
            self.responding = True
            self._interrupted = False  # a new answer after a cut one

    def _interrupt(self) -> None:
        self._flush_agent()
        self._emit(AssistantInterrupted(self.item_id))
        self.responding = False
        self._interrupted = True
        self._response += 1  # whatever comes next is a new utterance, never the one just flushed

    def _speech_ended(self) -> None:
        if self._speaking:
            self._speaking = False
            self._emit(CallerSpeechStopped())

    def _flush_caller(self) -> None:
        """The caller's turn is over (the model answers or calls a tool): its speech ended, its text is final."""
        if self._caller:
            self._speech_ended()
            self._emit(CallerText("".join(self._caller).strip(), final=True))
            self._caller = []

    def _flush_agent(self) -> None:
        if self._agent:
            self._emit(AssistantText("".join(self._agent).strip(), final=True, item_id=self.item_id))
            self._agent = []

    def _tool_call(self, raw: Any, behaviour: Mapping[str, bool]) -> list[FunctionCall]:
        self._flush_caller()
        calls = []
        for fc in _object(raw, "toolCall").get("functionCalls") or []:
            fc = _object(fc, "toolCall.functionCalls[]")
            call_id, name = fc.get("id"), fc.get("name")
            if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
                log.warning("%s: ignored a function call without id or name (it cannot be answered)", self.provider)
                continue
            calls.append(FunctionCall(call_id, name, fc.get("args"), behaviour.get(name, False)))
        return calls

    def _usage(self, um: Mapping[str, Any]) -> None:
        sent, got = self.audio_in_ms - self._reported_in, self.audio_out_bytes - self._reported_out
        self._reported_in, self._reported_out = self.audio_in_ms, self.audio_out_bytes
        report = gemini_usage(um, sent / 1000, PCM16_24K.duration_ms(got) / 1000)
        if report is not None:
            self._emit(report)

    def connection_lost(self) -> bool:
        """The socket closed mid-call: a response in progress is cut off. True when one was."""
        was = self.responding
        if was:
            self._interrupt()
        self._flush_caller()
        self._interrupted = False
        return was


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise TypeError(f"{where} is a {type(value).__name__}, not an object")
    return value
