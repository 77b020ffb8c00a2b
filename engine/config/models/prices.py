"""``providers.<name>.prices``: what a provider charges, per million tokens of each kind and per minute.

Why its own module: the usage meter (engine.usage) prices every turn from it, and the shipped defaults
(engine.usage.prices) are values of this same model, dated and sourced, which a config entry overrides.
"""

from __future__ import annotations

import datetime
from typing import Any

from pydantic import Field, HttpUrl

from engine.config.models.common import Strict

PER_MTOK = "US dollars per million tokens"


def _price(description: str, default: float | None = None) -> Any:
    """A price field: a finite number of US dollars, never negative; ``default`` None means it falls back."""
    return Field(default=default, ge=0, allow_inf_nan=False, description=description)


class Prices(Strict):
    """US dollars. A token price left out falls back as its field says; ``per_minute`` is charged for the time the
    provider's session was open (Deepgram Voice Agent and ElevenLabs Agents bill that way)."""

    input_per_mtok: float = _price(PER_MTOK, 0.0)
    output_per_mtok: float = _price(PER_MTOK, 0.0)
    cached_input_per_mtok: float | None = _price(f"{PER_MTOK} read from the prompt cache (else input)")
    cache_write_per_mtok: float | None = _price(
        f"{PER_MTOK} written to the prompt cache (else the provider's documented rule: Anthropic 1.25x input for "
        "5-minute writes; else input)"
    )
    cache_write_1h_per_mtok: float | None = _price(
        f"{PER_MTOK} written to the prompt cache for an hour (else the provider's documented rule: Anthropic 2x "
        "input; else the cache write price)"
    )
    audio_input_per_mtok: float | None = _price(f"{PER_MTOK} of uncached audio input (else input)")
    audio_output_per_mtok: float | None = _price(f"{PER_MTOK} of audio output (else output)")
    per_minute: float = _price("US dollars per session minute", 0.0)
    prices_as_of: datetime.date | None = Field(default=None, description="when the prices were read off source")
    source: HttpUrl | None = Field(default=None, description="where the prices were read")
