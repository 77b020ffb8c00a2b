"""Gemini Live's client messages: options, the ``setup`` message, tool behaviour, and bounded tool results.

Why it exists: everything the Gemini Live adapter *says* is decided here, away from the socket lifecycle in
``gemini_live``, so each rule has one home (reference/wire-formats.md §6):

* ``setup`` carries the model (``models/…``), AUDIO output with the configured voice, the instructions, the
  declarations the project's renderer makes for ``gemini_live`` (plus ``behavior``), automatic activity
  detection, both transcriptions and ``sessionResumption`` (with the handle when resuming).
* A tool's ``behavior`` follows its latency class, judged by the budget layer's own rule (``classify``) on its
  declared latency: a tool that fits the FAST or STANDARD budget is ``BLOCKING`` (the model waits for the
  result, so it cannot act on a half-done call), a slower one ``NON_BLOCKING`` (the model keeps talking and the
  result is scheduled ``WHEN_IDLE``); call-control tools (``hangup_call``, transfers) are always ``BLOCKING``.
* Text for the model goes by the route of the model's family (``gemini_families``); the transcript replayed
  after a fresh reconnect is that family's history message, announced in ``setup.historyConfig`` where the
  family needs it.
* Tool results are made JSON-safe and bounded in depth and size before they are sent: AVA saw the socket die
  with 1011 on large or deeply nested ``toolResponse`` payloads.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from engine.budget.stats import WindowStats
from engine.budget.tiers import classify
from engine.config.models import BudgetConfig
from engine.providers.rendering import RenderedTools
from engine.realtime.gemini_families import FAMILY_IDS, Family
from engine.sessions.history import HistoryItem, Message, ToolResultItem
from engine.tools.base import ToolCategory, ToolDefinition
from engine.tools.view import ToolView

DEFAULT_URL = "wss://generativelanguage.googleapis.com/ws/google.ai.generativelanguage.v1beta.GenerativeService.BidiGenerateContent"
Scheduling = Literal["WHEN_IDLE", "INTERRUPT", "SILENT"]
_SCHEDULINGS = ("WHEN_IDLE", "INTERRUPT", "SILENT")
_NO_STATS = WindowStats(0, None, None, 0)
_BUDGET = BudgetConfig()


MIN_BATCH_MS, MAX_BATCH_MS = 10, 200


def audio_in_mime(rate: int) -> str:
    """The ``mimeType`` of caller audio at ``rate`` Hz (raw PCM16 LE; Gemini resamples what is not 16 kHz)."""
    return f"audio/pcm;rate={rate}"


def audio_in_message(mime: str, pcm: bytes) -> str:
    """The ``realtimeInput`` message carrying ``pcm``, as JSON text. Built directly, not with ``json.dumps``: it is
    sent 25–50 times a second per call, base64 needs no JSON escaping, and ``mime`` is ours (``audio_in_mime``)."""
    data = base64.b64encode(pcm).decode("ascii")
    return '{"realtimeInput":{"audio":{"mimeType":"' + mime + '","data":"' + data + '"}}}'


@dataclass(frozen=True, slots=True)
class GeminiOptions:
    """``providers.<name>.options`` for a ``gemini_live`` provider, checked once when the provider is built."""

    gemini_schema: Literal["json_schema", "openapi"] = "json_schema"
    silence_duration_ms: int | None = None
    prefix_padding_ms: int | None = None
    #: A tool result larger than this (JSON bytes) is cut to its status, message and a prefix of its data.
    max_result_bytes: int = 16_000
    #: Deeper values of a tool result are sent as a JSON string instead of nested objects.
    max_result_depth: int = 6
    #: Exposed names forced BLOCKING / NON_BLOCKING whatever their latency class.
    blocking: tuple[str, ...] = ()
    non_blocking: tuple[str, ...] = ()
    #: False: every tool BLOCKING (endpoints or models without asynchronous function calling: Vertex, Gemini 3.x).
    allow_non_blocking: bool = True
    #: How a NON_BLOCKING tool's final result is scheduled (WHEN_IDLE: after the model's current output).
    result_scheduling: Scheduling = "WHEN_IDLE"
    reconnect_attempts: int = 5
    reconnect_backoff_ms: int = 500
    #: How long a planned reconnect (tool change) waits for a resumption handle covering the finished turn.
    handle_wait_ms: int = 1500
    context_window_compression: bool = True
    #: Caller audio is sent in pieces of at least this many ms (the phone's 20 ms frames joined in pairs by
    #: default, as Google's own examples send 64 ms): half the messages for at most 20 ms more delay.
    input_batch_ms: int = 40
    #: The model family whose rules the session follows (``gemini_families``): ``auto`` reads it from the model.
    family: str = "auto"
    #: Reconnects the provider causes (dropped sockets, ``goAway``) allowed within a minute; one more ends the call.
    max_resumes_per_minute: int = 3

    @classmethod
    def parse(cls, provider: str, raw: Mapping[str, Any]) -> GeminiOptions:
        where = f"providers.{provider}.options"
        unknown = sorted(set(raw) - set(cls.__dataclass_fields__))
        if unknown:
            known = ", ".join(cls.__dataclass_fields__)
            raise ValueError(f"{where}: unknown option(s) {', '.join(unknown)} for gemini_live (known: {known})")
        values: dict[str, Any] = {}
        for key, value in raw.items():
            default = cls.__dataclass_fields__[key].default
            if key == "gemini_schema" and value not in ("json_schema", "openapi"):
                raise ValueError(f"{where}.gemini_schema: 'json_schema' or 'openapi', not {value!r}")
            if key == "family" and value not in ("auto", *FAMILY_IDS):
                raise ValueError(f"{where}.family: one of auto, {', '.join(FAMILY_IDS)}, not {value!r}")
            if key == "result_scheduling" and value not in _SCHEDULINGS:
                raise ValueError(f"{where}.result_scheduling: one of {', '.join(_SCHEDULINGS)}, not {value!r}")
            if key in ("blocking", "non_blocking"):
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise ValueError(f"{where}.{key}: a list of tool names, not {value!r}")
                value = tuple(value)
            elif isinstance(default, bool) and not isinstance(value, bool):
                raise ValueError(f"{where}.{key}: true or false, not {value!r}")
            elif (isinstance(default, int) and not isinstance(default, bool)) or key.endswith("_ms"):
                if isinstance(value, bool) or not isinstance(value, int) or value < (0 if "attempts" in key else 1):
                    raise ValueError(f"{where}.{key}: a positive whole number, not {value!r}")
                if key == "input_batch_ms" and not MIN_BATCH_MS <= value <= MAX_BATCH_MS:
                    raise ValueError(
                        f"{where}.input_batch_ms: between {MIN_BATCH_MS} and {MAX_BATCH_MS} ms, not {value}"
                        " (longer pieces delay what the model hears; 20 sends each phone frame as it comes)"
                    )
            values[key] = value
        return cls(**values)


def model_path(model: str) -> str:
    return model if model.startswith(("models/", "tunedModels/")) else f"models/{model}"


def is_non_blocking(d: ToolDefinition, opts: GeminiOptions) -> bool:
    """Slow tools (declared beyond the STANDARD budget, by the budget layer's rule) run NON_BLOCKING."""
    if d.name in opts.blocking or not opts.allow_non_blocking:
        return False
    if d.name in opts.non_blocking:
        return True
    if d.category == ToolCategory.TELEPHONY:
        return False
    status = classify(d, ("", d.server, d.origin_name or d.name), _NO_STATS, _NO_STATS, _BUDGET, exempt=False)
    return status.base_tier not in ("fast", "standard")


def declarations(
    rendered: RenderedTools, view: ToolView, opts: GeminiOptions
) -> tuple[list[dict[str, Any]], dict[str, bool]]:
    """The setup's ``tools`` (each declaration with its ``behavior``) and provider name -> NON_BLOCKING."""
    defs = {d.name: d for d in view.definitions()}
    behaviour: dict[str, bool] = {}
    out: list[dict[str, Any]] = []
    for group in rendered.tools:
        decls = []
        for decl in group.get("functionDeclarations", []):
            d = defs.get(rendered.names.exposed_name(decl["name"]))
            slow = d is not None and is_non_blocking(d, opts)
            behaviour[decl["name"]] = slow
            decls.append({**decl, "behavior": "NON_BLOCKING" if slow else "BLOCKING"})
        out.append({"functionDeclarations": decls})
    return out, behaviour


def setup_message(
    *,
    model: str,
    voice: str | None,
    instructions: str,
    tools: list[dict[str, Any]],
    opts: GeminiOptions,
    handle: str | None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    history_config: bool = False,
) -> dict[str, Any]:
    """The first client message of every connection (§6.1); ``history_config``: initial history follows in
    ``clientContent`` (``historyConfig.initialHistoryInClientContent``)."""
    gen: dict[str, Any] = {"responseModalities": ["AUDIO"]}
    if voice:
        gen["speechConfig"] = {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": voice}}}
    if temperature is not None:
        gen["temperature"] = temperature
    if max_tokens is not None:
        gen["maxOutputTokens"] = max_tokens
    vad: dict[str, Any] = {"disabled": False}
    if opts.silence_duration_ms is not None:
        vad["silenceDurationMs"] = opts.silence_duration_ms
    if opts.prefix_padding_ms is not None:
        vad["prefixPaddingMs"] = opts.prefix_padding_ms
    setup: dict[str, Any] = {"model": model_path(model), "generationConfig": gen}
    if instructions:
        setup["systemInstruction"] = {"parts": [{"text": instructions}]}
    if tools:
        setup["tools"] = tools
    setup["realtimeInputConfig"] = {"automaticActivityDetection": vad}
    setup["inputAudioTranscription"] = {}
    setup["outputAudioTranscription"] = {}
    setup["sessionResumption"] = {"handle": handle} if handle else {}
    if opts.context_window_compression:
        setup["contextWindowCompression"] = {"slidingWindow": {}}
    if history_config:
        setup["historyConfig"] = {"initialHistoryInClientContent": True}
    return {"setup": setup}


def transcript_replay(history: Sequence[HistoryItem], last: int, family: Family) -> dict[str, Any] | None:
    """After a reconnect without a handle: the call's last ``last`` spoken turns as context (no generation), as
    ``family`` takes history; None when nothing was said."""
    turns = [
        {"role": "model" if m.role == "assistant" else "user", "parts": [{"text": m.text}]}
        for m in history
        if isinstance(m, Message) and m.role in ("user", "assistant") and m.text
    ][-last:]
    return family.history_message(turns) if turns else None


# ------------------------------------------------------------------------------------------------- results


def json_safe(value: Any, max_depth: int, max_str: int = 4000, max_items: int = 200, _depth: int = 0) -> Any:
    """``value`` as plain JSON values: finite numbers, clipped strings, bounded lists and objects with string
    keys; below ``max_depth`` a container becomes its (clipped) JSON text; anything else its ``str``."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, str):
        return value if len(value) <= max_str else value[:max_str] + "…"
    if isinstance(value, bytes | bytearray):
        return f"<{len(value)} bytes>"
    if isinstance(value, Mapping | list | tuple | set | frozenset):
        if _depth >= max_depth:
            text = json.dumps(value, default=str, ensure_ascii=False)[:max_str]
            return text
        if isinstance(value, Mapping):
            items = list(value.items())[:max_items]
            return {str(k): json_safe(v, max_depth, max_str, max_items, _depth + 1) for k, v in items}
        seq = list(value)[:max_items]
        return [json_safe(v, max_depth, max_str, max_items, _depth + 1) for v in seq]
    return json_safe(str(value), max_depth, max_str, max_items, _depth)


def bounded_payload(item: ToolResultItem, opts: GeminiOptions) -> dict[str, Any]:
    """The result's payload (status, message, data), JSON-safe and at most ``max_result_bytes`` of JSON."""
    payload = json_safe(item.payload(), opts.max_result_depth)
    if len(json.dumps(payload)) <= opts.max_result_bytes:
        return payload
    message = str(payload.get("message", ""))[: opts.max_result_bytes // 4]
    head = {"status": payload.get("status"), "message": message, "note": ""}
    room = max(0, opts.max_result_bytes - len(json.dumps(head)) - 120)
    data_text = json.dumps(payload.get("data"))
    note = f"result cut to {opts.max_result_bytes} bytes of JSON (it had {len(data_text)} of data)"
    return {**head, "note": note, "data_truncated": data_text[:room]}


def function_response(
    call_id: str,
    name: str,
    item: ToolResultItem,
    opts: GeminiOptions,
    *,
    non_blocking: bool,
    ends_stream: bool = False,
) -> dict[str, Any]:
    """One ``functionResponses`` entry: the SAME id and name, the result under ``output`` or ``error``."""
    key = "output" if item.status == "success" else "error"
    fr: dict[str, Any] = {"id": call_id, "name": name, "response": {key: bounded_payload(item, opts)}}
    if non_blocking:
        fr["scheduling"] = opts.result_scheduling
    if ends_stream:
        fr["willContinue"] = False
    return fr


def interim_response(call_id: str, name: str, announcement: str) -> dict[str, Any]:
    """A NON_BLOCKING call's progress note: the model says it when idle; the call stays open (willContinue)."""
    return {
        "id": call_id,
        "name": name,
        "response": {"output": {"status": "running", "say_to_caller": announcement}},
        "willContinue": True,
        "scheduling": "WHEN_IDLE",
    }
