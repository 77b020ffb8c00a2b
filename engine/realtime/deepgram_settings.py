"""The Deepgram Voice Agent's client payloads: ``Settings``, ``UpdateThink`` and the conversation context.

Why it exists: the agent session (``deepgram_session``) holds the socket and the call's state; what it sends is
built here from the provider's config, the negotiated audio format and the call's rendered functions, so the
payload rules of reference/wire-formats.md §7 live in one place and can be read (and tested) apart from the socket:

- audio both ways in one encoding: ``mulaw``/8000 (telephony, no transcoding), ``alaw``/8000, or ``linear16`` at
  16000/24000, with ``container: none`` on the output so the agent streams raw samples;
- ``agent.listen`` / ``agent.think`` / ``agent.speak`` providers from the config (``model`` is the think model,
  ``voice`` the speak model, ``options`` the rest);
- ``think.functions``: every tool of the view as the project's renderer renders it for ``deepgram_agent``
  (``engine.providers.rendering``: all client-side, no ``endpoint``, since the engine runs every call through its
  one execution path; ``defer_until_eot: true`` on every tool that is not idempotent, so an irreversible action
  never runs on a speculative end of turn);
- on a reconnect, ``agent.context.messages`` carries the call's history so far (and no greeting).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.config.models import ProviderConfig
from engine.providers.rendering import RenderedTools
from engine.providers.textloop import call_arguments_json, result_text
from engine.realtime.session import PCM16_16K, PCM16_24K, PCMA_8K, PCMU_8K, AudioSpec
from engine.sessions.history import HistoryItem, Message, ToolCallItem, ToolResultItem

DEFAULT_URL = "wss://agent.deepgram.com/v1/agent/converse"
DEFAULT_LISTEN_MODEL = "nova-3"
DEFAULT_THINK_PROVIDER = "open_ai"
DEFAULT_THINK_MODEL = "gpt-4o-mini"
DEFAULT_VOICE = "aura-2-thalia-en"

#: Caller-audio formats the agent takes, preferred first (μ-law/A-law straight from the phone; PCM otherwise).
SUPPORTED_FORMATS: tuple[AudioSpec, ...] = (PCMU_8K, PCMA_8K, PCM16_16K, PCM16_24K)
_ENCODINGS = {"pcmu": "mulaw", "pcma": "alaw", "pcm16": "linear16"}

_NUMBER_OPTIONS = {
    "keepalive_s": 5.0,
    "reconnect_attempts": 5,
    "reconnect_first_s": 0.5,
    "reconnect_max_s": 8.0,
    "announce_wait_s": 3.0,
}
_DICT_OPTIONS = ("listen_provider", "think_provider", "speak_provider", "think_endpoint", "speak_endpoint")


@dataclass(frozen=True, slots=True)
class AgentOptions:
    """``providers.<name>`` of type ``deepgram_agent``, checked once when the provider is built."""

    listen_provider: dict[str, Any]
    think_provider: dict[str, Any]
    speak_provider: dict[str, Any]
    think_endpoint: dict[str, Any] | None = None
    speak_endpoint: dict[str, Any] | None = None
    keepalive_s: float = 5.0
    reconnect_attempts: int = 5
    reconnect_first_s: float = 0.5
    reconnect_max_s: float = 8.0
    announce_wait_s: float = 3.0
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_config(cls, name: str, config: ProviderConfig) -> AgentOptions:
        """Read the config; a bad value raises ``ValueError`` naming ``providers.<name>.<field>``."""
        opts = dict(config.options)
        where = f"providers.{name}.options"
        nums: dict[str, float] = {}
        for key, default in _NUMBER_OPTIONS.items():
            v = opts.pop(key, default)
            if isinstance(v, bool) or not isinstance(v, int | float) or v < 0 or v != v:
                raise ValueError(f"{where}.{key} must be a number >= 0, got {v!r}")
            nums[key] = v
        dicts: dict[str, dict[str, Any] | None] = {}
        named: dict[str, str] = {}
        for key in _DICT_OPTIONS:
            v = opts.pop(key, None)
            if isinstance(v, str) and key.endswith("_provider"):
                named[key] = v  # only the vendor changes: the model and the rest stay
                continue
            if v is not None and not isinstance(v, Mapping):
                raise ValueError(f"{where}.{key} must be a mapping (or a provider type name), got {v!r:.80}")
            dicts[key] = dict(v) if v is not None else None
        listen: dict[str, Any] = {"type": "deepgram", "model": str(opts.pop("listen_model", DEFAULT_LISTEN_MODEL))}
        if "language" in opts:
            listen["language"] = str(opts.pop("language"))
        think: dict[str, Any] = {"type": DEFAULT_THINK_PROVIDER, "model": config.model or DEFAULT_THINK_MODEL}
        if config.temperature is not None:
            think["temperature"] = config.temperature
        speak: dict[str, Any] = {"type": "deepgram", "model": config.voice or DEFAULT_VOICE}
        extra: dict[str, Any] = {k: opts.pop(k) for k in ("mip_opt_out", "tags") if k in opts}
        if opts:
            known = ", ".join(
                sorted([*_NUMBER_OPTIONS, *_DICT_OPTIONS, "listen_model", "language", "mip_opt_out", "tags"])
            )
            raise ValueError(f"{where}: unknown option(s) {', '.join(sorted(opts))} (known: {known})")
        base = {"listen_provider": listen, "think_provider": think, "speak_provider": speak}
        for key, vendor in named.items():
            base[key] = {**base[key], "type": vendor}
        return cls(
            listen_provider=_merge(base["listen_provider"], dicts.get("listen_provider")),
            think_provider=_merge(base["think_provider"], dicts.get("think_provider")),
            speak_provider=_merge(base["speak_provider"], dicts.get("speak_provider")),
            think_endpoint=dicts.get("think_endpoint"),
            speak_endpoint=dicts.get("speak_endpoint"),
            keepalive_s=float(nums["keepalive_s"]),
            reconnect_attempts=int(nums["reconnect_attempts"]),
            reconnect_first_s=float(nums["reconnect_first_s"]),
            reconnect_max_s=float(nums["reconnect_max_s"]),
            announce_wait_s=float(nums["announce_wait_s"]),
            extra=extra,
        )


def _merge(default: dict[str, Any], override: dict[str, Any] | None) -> dict[str, Any]:
    """The configured provider object: merged over the default of the same type, taken whole when it is a
    mapping for another vendor (whose fields differ from Deepgram's)."""
    if not override:
        return default
    if override.get("type", default["type"]) == default["type"]:
        return {**default, **override}
    return override


def audio_settings(spec: AudioSpec) -> dict[str, Any]:
    """``Settings.audio``: the same format both ways; raw samples out (``container: none``)."""
    enc = _ENCODINGS[spec.encoding]
    return {
        "input": {"encoding": enc, "sample_rate": spec.rate},
        "output": {"encoding": enc, "sample_rate": spec.rate, "container": "none"},
    }


def think_settings(options: AgentOptions, prompt: str, fns: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One ``think`` object (``Settings.agent.think`` and ``UpdateThink.think``: the whole of it each time)."""
    think: dict[str, Any] = {"provider": dict(options.think_provider)}
    if options.think_endpoint:
        think["endpoint"] = dict(options.think_endpoint)
    if prompt:
        think["prompt"] = prompt
    think["functions"] = [dict(f) for f in fns]
    return think


def settings(
    options: AgentOptions,
    audio: AudioSpec,
    think: Mapping[str, Any],
    *,
    greeting: str | None,
    context: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The ``Settings`` message; ``context`` (the history so far) only when resuming after a reconnect."""
    speak: dict[str, Any] = {"provider": dict(options.speak_provider)}
    if options.speak_endpoint:
        speak["endpoint"] = dict(options.speak_endpoint)
    agent: dict[str, Any] = {
        "listen": {"provider": dict(options.listen_provider)},
        "think": dict(think),
        "speak": speak,
    }
    if context:
        agent["context"] = {"messages": [dict(m) for m in context]}
    if greeting:
        agent["greeting"] = greeting
    msg: dict[str, Any] = {"type": "Settings", **options.extra, "audio": audio_settings(audio), "agent": agent}
    return msg


def context_messages(items: Sequence[HistoryItem], rendered: RenderedTools) -> list[dict[str, Any]]:
    """The call's history as ``agent.context.messages``: what each side said, and each answered tool call
    (id as the provider sent it, name as the provider knows it, arguments and response as JSON strings)."""
    results = {i.call_id: i for i in items if isinstance(i, ToolResultItem)}
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, Message):
            if item.role in ("user", "assistant") and item.text:
                out.append({"type": "History", "role": item.role, "content": item.text})
        elif isinstance(item, ToolCallItem) and item.id in results:
            res = results[item.id]
            call = {
                "id": dict(item.provider_ids).get("provider", item.id),
                "name": rendered.names.provider_name(item.name),
                "client_side": True,
                "arguments": call_arguments_json(item),
                "response": result_text(res),
            }
            sig = item.meta_for("deepgram_agent").get("thought_signature")
            if isinstance(sig, str):  # a Gemini think model's signature for this call, echoed
                call["thought_signature"] = sig
            out.append({"type": "History", "function_calls": [call]})
    return out


def describe(m: Mapping[str, Any]) -> str:
    """A ``Warning``/``Error`` from the agent as one line: code and description (it never echoes the key)."""
    code, desc = m.get("code"), m.get("description") or m.get("message") or json.dumps(m)[:200]
    return f"{code}: {desc}" if code else str(desc)
