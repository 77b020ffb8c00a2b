"""OpenAI Realtime (GA) payloads: the session configuration, audio formats, replayed history, usage.

Why it exists: the session adapter (``openai_realtime``) owns the socket and the response lifecycle; what the
messages look like is a separate, pure job kept here so it can be read against reference/wire-formats.md §3 on
its own and tested without a socket. Everything built here is a client event the openai SDK's
``openai.types.realtime`` types accept (the loopback fake validates each one against them): ``session.update``
with ``session.type: realtime``, flat function tools, ``audio.input.format``/``audio.output.format``
(``audio/pcmu``, ``audio/pcma`` or ``audio/pcm`` at 24 kHz), server VAD, input transcription and the voice.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from engine.providers.ids import provider_call_id
from engine.providers.rendering.names import NameMap
from engine.providers.textloop import call_arguments_json, result_text
from engine.realtime.session import PCM16_24K, PCMA_8K, PCMU_8K, AudioSpec, ProviderNotice, UsageReport
from engine.sessions.history import HistoryItem, Message, ToolCallItem, ToolResultItem
from engine.usage.report import openai_realtime as openai_realtime_usage

PROVIDER_TYPE = "openai_realtime"
DEFAULT_URL = "wss://api.openai.com/v1/realtime"
DEFAULT_TRANSCRIPTION_MODEL = "gpt-4o-mini-transcribe"
#: The formats the GA API takes and produces, preferred first (μ-law passes telephony audio straight through).
FORMATS: tuple[AudioSpec, ...] = (PCMU_8K, PCMA_8K, PCM16_24K)
#: Error codes after which the call cannot go on (every further response would fail the same way).
FATAL_CODES = frozenset({"insufficient_quota"})

_VAD_KEYS: dict[str, type | tuple[type, ...]] = {
    "type": str,
    "threshold": (int, float),
    "prefix_padding_ms": int,
    "silence_duration_ms": int,
    "idle_timeout_ms": int,
    "create_response": bool,
    "interrupt_response": bool,
    "eagerness": str,
}
_SERVER_VAD = {
    "type": "server_vad",
    "threshold": 0.5,
    "prefix_padding_ms": 300,
    "silence_duration_ms": 500,
    "create_response": True,
    "interrupt_response": True,
}
_TRANSCRIPTION_KEYS = {"model", "language", "prompt"}
#: Every ``options`` key an ``openai_realtime`` provider reads (anything else is a typo, refused at load).
OPTION_KEYS = frozenset(
    {
        "turn_detection",
        "transcription",
        "noise_reduction",
        "reconnect_tries",
        "reconnect_first_ms",
        "reconnect_max_ms",
        "replay_items",
    }
)
_NOISE = ("near_field", "far_field")


def _int_option(where: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValueError(f"{where}: an integer from {low} to {high}, not {value!r}")
    return value


@dataclass(frozen=True, slots=True)
class RealtimeOptions:
    """``providers.<name>.options`` of an ``openai_realtime`` provider, checked once when the config loads."""

    turn_detection: dict[str, Any]
    transcription: dict[str, Any] | None
    noise_reduction: str | None
    reconnect_tries: int
    reconnect_first_ms: int
    reconnect_max_ms: int
    replay_items: int

    @classmethod
    def parse(cls, name: str, options: Mapping[str, Any]) -> RealtimeOptions:
        where = f"providers.{name}.options"
        unknown = sorted(set(options) - OPTION_KEYS)
        if unknown:
            raise ValueError(f"{where}.{unknown[0]}: unknown option (known: {', '.join(sorted(OPTION_KEYS))})")
        vad = options.get("turn_detection", {})
        if not isinstance(vad, Mapping):
            raise ValueError(f"{where}.turn_detection: a mapping of server VAD settings, not {vad!r}")
        for key, value in vad.items():
            want = _VAD_KEYS.get(key)
            if want is None:
                raise ValueError(f"{where}.turn_detection.{key}: unknown (known: {', '.join(sorted(_VAD_KEYS))})")
            if not isinstance(value, want) or (want is not bool and isinstance(value, bool)):
                raise ValueError(f"{where}.turn_detection.{key}: wrong type {type(value).__name__}")
        kind = vad.get("type", "server_vad")
        if kind not in ("server_vad", "semantic_vad"):
            raise ValueError(f"{where}.turn_detection.type: 'server_vad' or 'semantic_vad', not {kind!r}")
        if kind == "server_vad":
            if "eagerness" in vad:
                raise ValueError(f"{where}.turn_detection.eagerness: only for semantic_vad")
            turn = {**_SERVER_VAD, **vad}
        else:
            extra = set(vad) - {"type", "eagerness", "create_response", "interrupt_response"}
            if extra:
                raise ValueError(f"{where}.turn_detection: {', '.join(sorted(extra))} only apply to server_vad")
            turn = {"type": "semantic_vad", "create_response": True, "interrupt_response": True, **vad}
        return cls(
            turn_detection=turn,
            transcription=_transcription(where, options.get("transcription", DEFAULT_TRANSCRIPTION_MODEL)),
            noise_reduction=_noise(where, options.get("noise_reduction")),
            reconnect_tries=_int_option(f"{where}.reconnect_tries", options.get("reconnect_tries", 5), 0, 100),
            reconnect_first_ms=_int_option(
                f"{where}.reconnect_first_ms", options.get("reconnect_first_ms", 250), 0, 60_000
            ),
            reconnect_max_ms=_int_option(
                f"{where}.reconnect_max_ms", options.get("reconnect_max_ms", 5000), 0, 600_000
            ),
            replay_items=_int_option(f"{where}.replay_items", options.get("replay_items", 40), 0, 1000),
        )


def _transcription(where: str, value: Any) -> dict[str, Any] | None:
    if value is None or value is False:
        return None
    if isinstance(value, str) and value:
        return {"model": value}
    if isinstance(value, Mapping) and isinstance(value.get("model"), str):
        extra = set(value) - _TRANSCRIPTION_KEYS
        if extra:
            raise ValueError(
                f"{where}.transcription: unknown {', '.join(sorted(extra))} (known: model, language, prompt)"
            )
        return {k: str(v) for k, v in value.items()}
    raise ValueError(f"{where}.transcription: a model name, a mapping with 'model', or false — not {value!r}")


def _noise(where: str, value: Any) -> str | None:
    if value is None or value in _NOISE:
        return value
    raise ValueError(f"{where}.noise_reduction: 'near_field', 'far_field' or null, not {value!r}")


def audio_format(spec: AudioSpec) -> dict[str, Any]:
    """The GA format object for ``spec`` (the API takes PCM at 24 kHz only)."""
    if spec.encoding == "pcmu" and spec.rate == 8000:
        return {"type": "audio/pcmu"}
    if spec.encoding == "pcma" and spec.rate == 8000:
        return {"type": "audio/pcma"}
    if spec == PCM16_24K:
        return {"type": "audio/pcm", "rate": 24000}
    raise ValueError(f"OpenAI Realtime does not take {spec} audio (pcmu/8000, pcma/8000 or pcm16/24000)")


def session_config(
    *,
    model: str,
    instructions: str,
    tools: list[dict[str, Any]],
    input_spec: AudioSpec,
    output_spec: AudioSpec,
    voice: str | None,
    options: RealtimeOptions,
    max_output_tokens: int | None,
) -> dict[str, Any]:
    """The whole ``session`` object of the first ``session.update`` (and of the one after a reconnect)."""
    audio_in: dict[str, Any] = {"format": audio_format(input_spec), "turn_detection": dict(options.turn_detection)}
    if options.transcription is not None:
        audio_in["transcription"] = dict(options.transcription)
    if options.noise_reduction is not None:
        audio_in["noise_reduction"] = {"type": options.noise_reduction}
    audio_out: dict[str, Any] = {"format": audio_format(output_spec)}
    if voice:
        audio_out["voice"] = voice
    session: dict[str, Any] = {
        "type": "realtime",
        "model": model,
        "instructions": instructions,
        "output_modalities": ["audio"],
        "audio": {"input": audio_in, "output": audio_out},
        "tools": tools,
        "tool_choice": "auto",
    }
    if max_output_tokens is not None:
        session["max_output_tokens"] = max_output_tokens
    return session


def tools_update(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """A ``session.update`` that changes only the tools (GA updates only the fields present)."""
    return {"type": "session.update", "session": {"type": "realtime", "tools": tools}}


def say_instructions(text: str) -> str:
    """Instructions for a response that says ``text`` (greeting, slow-tool announcement) and nothing else."""
    return f"Say exactly the following to the caller, word for word, and nothing else: {json.dumps(text)}"


def operator_note(item_id: str, text: str) -> dict[str, Any]:
    """A ``system`` message item (hidden from the caller: never spoken) carrying an operator's whisper."""
    return {"type": "message", "id": item_id, "role": "system", "content": [{"type": "input_text", "text": text}]}


def call_id_of(item: ToolCallItem) -> str:
    """The call id the provider knows this call by: its own id when it made the call, else one rendered from ours."""
    for kind, value in item.provider_ids:
        if kind == "provider" and value:
            return value
    return provider_call_id(PROVIDER_TYPE, item.id)


def replay_items(history: Sequence[HistoryItem], names: NameMap, limit: int) -> list[dict[str, Any]]:
    """The conversation so far as GA conversation items (for a new socket after a drop): the last ``limit``
    items, never starting with a result whose call was cut off. System messages are left to the instructions."""
    items = [h for h in history if not (isinstance(h, Message) and h.role == "system")][-limit:] if limit else []
    calls = {h.id for h in items if isinstance(h, ToolCallItem)}
    ids = {h.id: call_id_of(h) for h in items if isinstance(h, ToolCallItem)}
    out: list[dict[str, Any]] = []
    for h in items:
        if isinstance(h, Message):
            kind = "input_text" if h.role == "user" else "output_text"
            out.append({"type": "message", "role": h.role, "content": [{"type": kind, "text": h.text}]})
        elif isinstance(h, ToolCallItem):
            out.append(
                {
                    "type": "function_call",
                    "call_id": ids[h.id],
                    "name": names.provider_name(h.name),
                    "arguments": call_arguments_json(h),
                }
            )
        elif isinstance(h, ToolResultItem) and h.call_id in calls:
            out.append({"type": "function_call_output", "call_id": ids[h.call_id], "output": result_text(h)})
    return out


def usage_report(usage: Any, input_audio_s: float, output_audio_s: float) -> UsageReport | None:
    """A ``response.done`` usage object (text and audio tokens, cached input) plus the audio seconds sent and
    received for that response (engine.usage.report reads the fields)."""
    report = openai_realtime_usage(usage, input_audio_s, output_audio_s)
    return None if report is None or report.empty else report


def result_output(result: ToolResultItem) -> str:
    """A tool result as the ``output`` string of a ``function_call_output`` item."""
    return result_text(result)


def error_output(message: str) -> str:
    """An error result for a call the engine could not run at all (the conversation goes on)."""
    return json.dumps({"status": "error", "message": message, "data": None}, ensure_ascii=False)


def failure_notice(provider: str, details: Any) -> ProviderNotice:
    """The notice for a ``response.done`` with ``status: failed``: its ``status_details.error``, fatal when the
    call cannot go on (quota)."""
    error = details.get("error") if isinstance(details, Mapping) else None
    error = error if isinstance(error, Mapping) else {}
    code = error.get("code") if isinstance(error.get("code"), str) else None
    message = str(error.get("message") or code or "no reason given")[:300]
    return ProviderNotice(f"{provider}: the response failed: {message}", fatal=code in FATAL_CODES, code=code)


def transcription_notice(provider: str, error: Any) -> ProviderNotice:
    """The notice for ``conversation.item.input_audio_transcription.failed``: the caller was heard but not
    understood (the model may still answer from the audio; the transcript has a gap)."""
    error = error if isinstance(error, Mapping) else {}
    code = str(error.get("code") or "unknown")[:80]
    message = str(error.get("message") or "no reason given")[:300]
    return ProviderNotice(
        f"{provider}: the caller's speech could not be transcribed: {message} ({code})", code="transcription_failed"
    )
