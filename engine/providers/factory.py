"""Builds provider instances from ``providers.<name>`` config entries, importing each adapter only when used."""

from __future__ import annotations

import importlib
from pathlib import Path

from engine.config.models import ProviderConfig
from engine.providers.base import Provider, ProviderError

#: provider type -> "module:Class". Adapters register here as they are built.
PROVIDER_CLASSES: dict[str, str] = {
    "scripted": "engine.providers.scripted:ScriptedProvider",
    "pipeline": "engine.providers.pipeline:PipelineProvider",
    "openai_chat": "engine.providers.openai_chat:OpenAIChatProvider",
    "openai_responses": "engine.providers.openai_responses:OpenAIResponsesProvider",
    "anthropic": "engine.providers.anthropic:AnthropicProvider",
    "gemini": "engine.providers.gemini:GeminiProvider",
    "ollama": "engine.providers.ollama:OllamaProvider",
    "openai_realtime": "engine.realtime.openai_realtime:OpenAIRealtimeProvider",
    "gemini_live": "engine.realtime.gemini_live:GeminiLiveProvider",
    "deepgram_agent": "engine.realtime.deepgram_agent:DeepgramAgentProvider",
    "elevenlabs_agent": "engine.realtime.elevenlabs_agent:ElevenLabsAgentProvider",
}


def create_provider(name: str, config: ProviderConfig, base_dir: Path | None = None) -> Provider:
    target = PROVIDER_CLASSES.get(config.type)
    if target is None:
        available = ", ".join(sorted(PROVIDER_CLASSES))
        raise ProviderError(
            name, f"provider type {config.type!r} is not available in this build (available: {available})"
        )
    module_name, cls_name = target.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as e:  # an optional dependency the adapter needs is not installed
        raise ProviderError(name, f"provider type {config.type!r} cannot be loaded: {e}") from e
    cls = getattr(module, cls_name)
    try:
        return cls(name, config, base_dir=base_dir)
    except ProviderError:
        raise
    except (ValueError, OSError) as e:
        raise ProviderError(name, str(e)) from e
