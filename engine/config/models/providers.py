"""The ``providers:`` section: one model per named provider (scripted, pipeline, text LLMs, realtime agents).

One flat model for every provider type, so ``ProviderType`` is the single list of what the factory can build;
type-specific fields are checked by the model validator.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, SecretStr, model_validator

from engine.config.models.common import FieldError, Strict
from engine.config.models.prices import Prices

ProviderType = Literal[
    "scripted",
    "pipeline",
    "openai_chat",
    "openai_responses",
    "anthropic",
    "gemini",
    "ollama",
    "openai_realtime",
    "deepgram_agent",
    "gemini_live",
    "elevenlabs_agent",
]


class ProviderConfig(Strict):
    type: ProviderType
    model: str | None = None
    api_key: SecretStr | None = None
    base_url: str | None = None
    script: str | None = Field(default=None, description="scripted: path of the dialog script (YAML).")
    brain: str | None = Field(default=None, description="pipeline: the provider that thinks (scripted or a text LLM).")
    voice: str | None = None
    agent_id: str | None = Field(
        default=None, description="elevenlabs_agent: the ElevenLabs agent to converse with (required there only)."
    )
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    max_tool_rounds: int = Field(default=8, gt=0)
    strict_tools: bool = False
    timeout_ms: int = Field(default=30_000, gt=0)
    max_retries: int = Field(default=3, ge=0)
    headers: dict[str, SecretStr] = Field(default_factory=dict)
    options: dict[str, Any] = Field(default_factory=dict)
    prices: Prices | None = Field(
        default=None, description="What this provider charges (default: the shipped table for its model, if any)."
    )

    @model_validator(mode="after")
    def _scripted_needs_script(self) -> ProviderConfig:
        if self.type == "scripted" and not self.script:
            raise FieldError("script", "a scripted provider needs 'script' (path of its dialog YAML)")
        if self.brain is not None and self.type != "pipeline":
            raise FieldError("brain", f"'brain' only applies to a pipeline provider, not {self.type!r}")
        if self.type == "elevenlabs_agent" and not (self.agent_id or "").strip():
            raise FieldError("agent_id", "an elevenlabs_agent provider needs 'agent_id' (the ElevenLabs agent's id)")
        if self.agent_id is not None and self.type != "elevenlabs_agent":
            raise FieldError("agent_id", f"'agent_id' only applies to an elevenlabs_agent provider, not {self.type!r}")
        return self
