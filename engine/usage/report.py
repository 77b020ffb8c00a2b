"""One shape for what any provider says it used, and the readers of each provider's own usage fields.

Why one module for all the wire formats: the fields overlap in confusing ways (Anthropic's ``input_tokens``
leaves out cache reads, OpenAI's and Gemini's include them; Realtime splits text and audio), and every price is
applied to the same normalised counts, so the mapping is written and tested in one place.

Normalised: ``input_tokens`` is every input token (cached and audio included), ``cached_input_tokens`` and
``input_audio_tokens`` (audio not read from the cache) are parts of it; ``output_tokens`` is every output token,
``output_audio_tokens`` a part of it. Seconds of audio and CPU are measured, not tokens.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class UsageReport:
    """Usage since the last report (one response, one turn), or a call's sum of them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    #: Of ``input_tokens``, written to the prompt cache (Anthropic ``cache_creation_input_tokens``).
    cache_write_tokens: int = 0
    #: Of ``cache_write_tokens``, written for an hour (Anthropic ``cache_creation.ephemeral_1h_input_tokens``).
    cache_write_1h_tokens: int = 0
    input_audio_tokens: int = 0
    output_audio_tokens: int = 0
    input_audio_s: float = 0.0
    output_audio_s: float = 0.0
    #: The offline pipeline: CPU seconds its recogniser, model and synthesiser spent.
    cpu_s: float = 0.0

    def __add__(self, other: UsageReport) -> UsageReport:
        summed: dict[str, Any] = {f: getattr(self, f) + getattr(other, f) for f in _FIELDS}
        return UsageReport(**summed)

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def empty(self) -> bool:
        return not any(getattr(self, f) for f in _FIELDS)

    def to_dict(self) -> dict[str, int | float]:
        return {f: round(v, 3) if isinstance(v := getattr(self, f), float) else v for f in _FIELDS}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> UsageReport:
        """A recorded report back (unknown or malformed fields ignored: recordings outlive versions)."""
        known: dict[str, Any] = {
            f: v for f in _FIELDS if isinstance(v := d.get(f), int | float) and not isinstance(v, bool)
        }
        return cls(**known)


_FIELDS = tuple(f.name for f in dataclasses.fields(UsageReport))


def _int(obj: Any, *path: str) -> int:
    """``obj[path[0]][path[1]]…`` as a count; 0 when a level is missing or not a number."""
    for key in path:
        if not isinstance(obj, Mapping):
            return 0
        obj = obj.get(key)
    return obj if isinstance(obj, int) and not isinstance(obj, bool) and obj > 0 else 0


def _at_paths(usage: Any, paths: Mapping[str, tuple[str, ...]]) -> UsageReport | None:
    """The report whose every count is read at its path in ``usage`` (None when ``usage`` is no mapping)."""
    if not isinstance(usage, Mapping):
        return None
    return UsageReport(**{name: _int(usage, *path) for name, path in paths.items()})


#: Chat Completions: each count's path in ``usage``.
_OPENAI_CHAT = {
    "input_tokens": ("prompt_tokens",),
    "output_tokens": ("completion_tokens",),
    "cached_input_tokens": ("prompt_tokens_details", "cached_tokens"),
    "input_audio_tokens": ("prompt_tokens_details", "audio_tokens"),
    "output_audio_tokens": ("completion_tokens_details", "audio_tokens"),
}
#: The Responses API: each count's path in ``usage``.
_OPENAI_RESPONSES = {
    "input_tokens": ("input_tokens",),
    "output_tokens": ("output_tokens",),
    "cached_input_tokens": ("input_tokens_details", "cached_tokens"),
    "cache_write_tokens": ("input_tokens_details", "cache_write_tokens"),
}


def openai_chat(usage: Any) -> UsageReport | None:
    """Chat Completions ``usage`` (in a stream: the last chunk's, asked for with ``stream_options.include_usage``)."""
    return _at_paths(usage, _OPENAI_CHAT)


def openai_responses(usage: Any) -> UsageReport | None:
    """Responses API ``usage`` (the response object, or ``response.completed``'s)."""
    return _at_paths(usage, _OPENAI_RESPONSES)


def openai_realtime(usage: Any, input_audio_s: float = 0.0, output_audio_s: float = 0.0) -> UsageReport | None:
    """Realtime ``response.done`` ``response.usage``: text and audio tokens both ways, cached input (of which
    audio) — plus the audio seconds sent and received for that response."""
    if not isinstance(usage, Mapping):
        if not (input_audio_s or output_audio_s):
            return None
        return UsageReport(input_audio_s=round(input_audio_s, 3), output_audio_s=round(output_audio_s, 3))
    audio_in = _int(usage, "input_token_details", "audio_tokens")
    cached_audio = _int(usage, "input_token_details", "cached_tokens_details", "audio_tokens")
    return UsageReport(
        input_tokens=_int(usage, "input_tokens"),
        output_tokens=_int(usage, "output_tokens"),
        cached_input_tokens=_int(usage, "input_token_details", "cached_tokens"),
        input_audio_tokens=max(0, audio_in - cached_audio),
        output_audio_tokens=_int(usage, "output_token_details", "audio_tokens"),
        input_audio_s=round(input_audio_s, 3),
        output_audio_s=round(output_audio_s, 3),
    )


def anthropic(usage: Any) -> UsageReport | None:
    """Messages ``usage`` (``message_start``'s, then ``message_delta``'s running output count when streamed).
    Anthropic's ``input_tokens`` leaves out cache reads and writes: they are added back. ``cache_creation`` splits
    the writes by how long they are kept (an hour's cost more); its 1-hour part is capped at the total written."""
    if not isinstance(usage, Mapping):
        return None
    read, write = _int(usage, "cache_read_input_tokens"), _int(usage, "cache_creation_input_tokens")
    return UsageReport(
        input_tokens=_int(usage, "input_tokens") + read + write,
        output_tokens=_int(usage, "output_tokens"),
        cached_input_tokens=read,
        cache_write_tokens=write,
        cache_write_1h_tokens=min(write, _int(usage, "cache_creation", "ephemeral_1h_input_tokens")),
    )


def _modality(details: Any, modality: str) -> int:
    """The ``tokenCount`` of one modality in a Gemini ``…TokensDetails`` list."""
    if not isinstance(details, list):
        return 0
    return sum(_int(d, "tokenCount") for d in details if isinstance(d, Mapping) and d.get("modality") == modality)


def gemini(meta: Any, input_audio_s: float = 0.0, output_audio_s: float = 0.0) -> UsageReport | None:
    """Gemini ``usageMetadata`` (REST: ``candidatesTokenCount``; Live: ``responseTokenCount``). Thinking tokens
    are billed as output; ``promptTokenCount`` includes the cached part."""
    if not isinstance(meta, Mapping):
        return None
    out = _int(meta, "candidatesTokenCount") or _int(meta, "responseTokenCount")
    out_details = meta.get("candidatesTokensDetails") or meta.get("responseTokensDetails")
    audio_in = _modality(meta.get("promptTokensDetails"), "AUDIO")
    cached_audio = _modality(meta.get("cacheTokensDetails"), "AUDIO")
    return UsageReport(
        input_tokens=_int(meta, "promptTokenCount") + _int(meta, "toolUsePromptTokenCount"),
        output_tokens=out + _int(meta, "thoughtsTokenCount"),
        cached_input_tokens=_int(meta, "cachedContentTokenCount"),
        input_audio_tokens=max(0, audio_in - cached_audio),
        output_audio_tokens=_modality(out_details, "AUDIO"),
        input_audio_s=round(input_audio_s, 3),
        output_audio_s=round(output_audio_s, 3),
    )


def ollama(body: Any) -> UsageReport | None:
    """Ollama ``/api/chat``'s final object: ``prompt_eval_count`` in, ``eval_count`` out (a local model: no price)."""
    if not isinstance(body, Mapping) or ("prompt_eval_count" not in body and "eval_count" not in body):
        return None
    return UsageReport(input_tokens=_int(body, "prompt_eval_count"), output_tokens=_int(body, "eval_count"))
