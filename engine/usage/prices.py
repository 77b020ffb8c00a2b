"""The shipped price table (dated, with its source) and the one place a usage report becomes dollars.

Why defaults at all: an operator running a paid model should see a cost without first copying a price sheet;
each default names the page it was read from and when, and ``providers.<name>.prices`` overrides it (prices
change: check the source before trusting a bill to these numbers). Models run locally (Ollama, the offline
pipeline, scripted) cost nothing here.
"""

from __future__ import annotations

import datetime
import re

from engine.config.models import ProviderConfig
from engine.config.models.prices import Prices
from engine.usage.report import UsageReport

_OPENAI = "https://platform.openai.com/docs/pricing"
_ANTHROPIC = "https://docs.anthropic.com/en/docs/about-claude/pricing"
_GOOGLE = "https://ai.google.dev/gemini-api/docs/pricing"
_AUTUMN_2025 = datetime.date(2025, 10, 1)


def _p(source: str, as_of: datetime.date, **prices: float) -> Prices:
    return Prices.model_validate({**prices, "source": source, "prices_as_of": as_of})


#: By model name (a dated snapshot of it matches too: ``gpt-4o-mini-2024-07-18``, ``claude-sonnet-4-5-20250929``).
MODEL_PRICES: dict[str, Prices] = {
    "gpt-4o-mini": _p(_OPENAI, _AUTUMN_2025, input_per_mtok=0.15, cached_input_per_mtok=0.075, output_per_mtok=0.60),
    "gpt-4o": _p(_OPENAI, _AUTUMN_2025, input_per_mtok=2.50, cached_input_per_mtok=1.25, output_per_mtok=10.00),
    "gpt-4.1-mini": _p(_OPENAI, _AUTUMN_2025, input_per_mtok=0.40, cached_input_per_mtok=0.10, output_per_mtok=1.60),
    "gpt-5-mini": _p(_OPENAI, _AUTUMN_2025, input_per_mtok=0.25, cached_input_per_mtok=0.025, output_per_mtok=2.00),
    "gpt-realtime": _p(
        _OPENAI,
        _AUTUMN_2025,
        input_per_mtok=4.00,
        cached_input_per_mtok=0.40,
        output_per_mtok=16.00,
        audio_input_per_mtok=32.00,
        audio_output_per_mtok=64.00,
    ),
    "claude-sonnet-4-5": _p(
        _ANTHROPIC, _AUTUMN_2025, input_per_mtok=3.00, cached_input_per_mtok=0.30, output_per_mtok=15.00
    ),
    "gemini-2.5-flash": _p(
        _GOOGLE,
        _AUTUMN_2025,
        input_per_mtok=0.30,
        cached_input_per_mtok=0.03,
        output_per_mtok=2.50,
        audio_input_per_mtok=1.00,
    ),
    "gemini-2.5-flash-native-audio": _p(
        _GOOGLE,
        _AUTUMN_2025,
        input_per_mtok=0.50,
        output_per_mtok=2.00,
        audio_input_per_mtok=3.00,
        audio_output_per_mtok=12.00,
    ),
}

#: By provider type, for providers billed per minute of open session whatever the model.
TYPE_PRICES: dict[str, Prices] = {
    "deepgram_agent": _p(
        "https://deepgram.com/learn/voice-agent-api-generally-available", datetime.date(2025, 6, 16), per_minute=0.075
    ),
    "elevenlabs_agent": _p("https://elevenlabs.io/pricing", _AUTUMN_2025, per_minute=0.10),
}

#: What may follow a model name in a snapshot of it: ``-preview``, dates (``-2025-08-28``, ``-20250929``,
#: ``-12-2025``), ``-latest``.
_SNAPSHOT = re.compile(r"(-preview)?(-\d{2,8})*(-latest)?")


def default_prices(ptype: str, model: str | None) -> Prices | None:
    """The shipped prices of ``model`` (or of a snapshot of it), else of the provider type, else None."""
    if model:
        name = model.removeprefix("models/")
        for key in sorted(MODEL_PRICES, key=len, reverse=True):
            if name == key or (name.startswith(key + "-") and _SNAPSHOT.fullmatch(name[len(key) :])):
                return MODEL_PRICES[key]
    return TYPE_PRICES.get(ptype)


def prices_for(config: ProviderConfig) -> Prices | None:
    """The provider's ``prices`` when configured, else the shipped default for its model or type."""
    return config.prices if config.prices is not None else default_prices(config.type, config.model)


def cost_of(u: UsageReport, p: Prices, session_s: float = 0.0) -> float:
    """US dollars for ``u`` (and ``session_s`` seconds of open session) at prices ``p``. Cache writes are charged
    as input (Anthropic bills them a little above it)."""
    text_in = max(0, u.input_tokens - u.cached_input_tokens - u.input_audio_tokens)
    text_out = max(0, u.output_tokens - u.output_audio_tokens)
    cached = p.cached_input_per_mtok if p.cached_input_per_mtok is not None else p.input_per_mtok
    audio_in = p.audio_input_per_mtok if p.audio_input_per_mtok is not None else p.input_per_mtok
    audio_out = p.audio_output_per_mtok if p.audio_output_per_mtok is not None else p.output_per_mtok
    tokens = (
        text_in * p.input_per_mtok
        + u.cached_input_tokens * cached
        + u.input_audio_tokens * audio_in
        + text_out * p.output_per_mtok
        + u.output_audio_tokens * audio_out
    )
    return tokens / 1_000_000 + p.per_minute * session_s / 60
