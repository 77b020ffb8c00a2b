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

_OPENAI_MODELS = "https://developers.openai.com/api/docs/models/"
_ANTHROPIC = "https://docs.anthropic.com/en/docs/about-claude/pricing"
#: The day each price was read off its source (the vendors' model pages carry no date of their own).
_READ = datetime.date(2026, 11, 29)


def _p(source: str, as_of: datetime.date, **prices: float) -> Prices:
    return Prices.model_validate({**prices, "source": source, "prices_as_of": as_of})


def _realtime(model: str, text_out: float) -> Prices:
    """OpenAI's realtime models of 2026: text and audio, cached input alike for both."""
    return _p(
        _OPENAI_MODELS + model,
        _READ,
        input_per_mtok=4.00,
        cached_input_per_mtok=0.40,
        output_per_mtok=text_out,
        audio_input_per_mtok=32.00,
        audio_output_per_mtok=64.00,
    )


#: By model name (a dated snapshot of it matches too: ``gpt-5-mini-2025-08-07``, ``claude-sonnet-4-5-20250929``).
#: Only prices read on the vendor's own page are here (see docs/observability.md for the models left to the
#: operator).
MODEL_PRICES: dict[str, Prices] = {
    "gpt-5-mini": _p(
        _OPENAI_MODELS + "gpt-5-mini", _READ, input_per_mtok=0.25, cached_input_per_mtok=0.025, output_per_mtok=2.00
    ),
    "gpt-realtime-1.5": _realtime("gpt-realtime-1.5", 16.00),
    "gpt-realtime-2": _realtime("gpt-realtime-2", 24.00),
    "claude-sonnet-4-5": _p(
        _ANTHROPIC,
        datetime.date(2025, 11, 15),
        input_per_mtok=3.00,
        cached_input_per_mtok=0.30,
        cache_write_per_mtok=3.75,
        cache_write_1h_per_mtok=6.00,
        output_per_mtok=15.00,
    ),
}

#: By provider type, for providers billed per minute of open session whatever the model.
TYPE_PRICES: dict[str, Prices] = {
    "deepgram_agent": _p(
        "https://deepgram.com/learn/voice-agent-api-generally-available", datetime.date(2025, 6, 16), per_minute=0.075
    ),
}

#: Prices a provider documents as a multiple of its input price, filled in where a configured table leaves them
#: out (Anthropic: cache reads 0.1x, 5-minute cache writes 1.25x, 1-hour cache writes 2x).
DERIVED: dict[str, dict[str, float]] = {
    "anthropic": {"cached_input_per_mtok": 0.1, "cache_write_per_mtok": 1.25, "cache_write_1h_per_mtok": 2.0},
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
    """The provider's ``prices`` when configured (what its vendor documents as a multiple of the input price filled
    in where left out), else the shipped default for its model or type."""
    if config.prices is None:
        return default_prices(config.type, config.model)
    p = config.prices
    rules = DERIVED.get(config.type, {})
    derived = {f: p.input_per_mtok * k for f, k in rules.items() if getattr(p, f) is None}
    return p.model_copy(update=derived) if derived else p


def cost_of(u: UsageReport, p: Prices, session_s: float = 0.0) -> float:
    """US dollars for ``u`` (and ``session_s`` seconds of open session) at prices ``p``. A price left out is the
    input's (or the output's) as ``Prices`` says."""
    text_in = max(0, u.input_tokens - u.cached_input_tokens - u.cache_write_tokens - u.input_audio_tokens)
    text_out = max(0, u.output_tokens - u.output_audio_tokens)
    cached = p.cached_input_per_mtok if p.cached_input_per_mtok is not None else p.input_per_mtok
    written = p.cache_write_per_mtok if p.cache_write_per_mtok is not None else p.input_per_mtok
    written_1h = p.cache_write_1h_per_mtok if p.cache_write_1h_per_mtok is not None else written
    audio_in = p.audio_input_per_mtok if p.audio_input_per_mtok is not None else p.input_per_mtok
    audio_out = p.audio_output_per_mtok if p.audio_output_per_mtok is not None else p.output_per_mtok
    tokens = (
        text_in * p.input_per_mtok
        + u.cached_input_tokens * cached
        + (u.cache_write_tokens - u.cache_write_1h_tokens) * written
        + u.cache_write_1h_tokens * written_1h
        + u.input_audio_tokens * audio_in
        + text_out * p.output_per_mtok
        + u.output_audio_tokens * audio_out
    )
    return tokens / 1_000_000 + p.per_minute * session_s / 60
