"""The ``budget:`` section: tier latency budgets, the tier selector and tool health/latency statistics.

Read by ``engine.budget``; the validators keep tiers growing and health thresholds ordered so the budget layer
never has to defend against an inverted config.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from engine.config.models.common import Strict, TierChoice


class TiersConfig(Strict):
    fast: int = Field(default=500, gt=0)
    standard: int = Field(default=1500, gt=0)
    deep: int = Field(default=4000, gt=0)

    @model_validator(mode="after")
    def _ordered(self) -> TiersConfig:
        grow = "tiers must grow: fast < standard < deep"
        self.require_below("fast", "standard", f"{grow} (fast={self.fast}, standard={self.standard})")
        self.require_below("standard", "deep", f"{grow} (standard={self.standard}, deep={self.deep})")
        return self


class SelectorConfig(Strict):
    deep_keywords: list[str] = Field(
        default_factory=lambda: [
            "think carefully",
            "take your time",
            "think hard",
            "consider carefully",
            "in detail",
        ]
    )
    standard_keywords: list[str] = Field(
        default_factory=lambda: ["remember", "rules", "who is", "what is", "look up", "recall"]
    )
    deep_cooldown_s: float = Field(default=30.0, ge=0)
    queue_depth_fast: int = Field(default=3, gt=0)


class BudgetConfig(Strict):
    tiers: TiersConfig = Field(default_factory=TiersConfig)
    default_tier: TierChoice = "auto"
    selector: SelectorConfig = Field(default_factory=SelectorConfig)
    window: int = Field(default=100, gt=0, description="Invocations kept per tool for p50/p99.")
    min_samples: int = Field(default=5, gt=0, description="Measured values replace declared ones after this many.")
    degraded_error_rate: float = Field(default=0.3, gt=0, le=1)
    unhealthy_error_rate: float = Field(default=0.6, gt=0, le=1)
    cache_size: int = Field(default=1024, ge=0)
    slow_response_threshold_ms: int = Field(default=1500, gt=0)
    slow_response_message: str = Field(
        default="One moment while I check that.",
        min_length=1,
        description="Spoken when a slow tool runs (unless the tool or its server has its own message).",
    )
    estimate_multiplier: float = Field(
        default=3.0,
        ge=1,
        description="A tool that declares only estimated_duration_ms (p50) is tiered by estimate × this.",
    )
    health_horizon_s: float = Field(
        default=300.0, gt=0, description="Errors older than this no longer count towards a tool's health."
    )
    calibration_probes: int = Field(default=5, gt=0, le=100, description="Probes per tool when calibrating.")
    exempt_tools: list[str] = Field(
        default_factory=lambda: ["hangup_call", "transfer", "blind_transfer", "cancel_transfer"],
        description="Call-control tools (names or patterns) shown on every tier and never clamped to its budget.",
    )

    @model_validator(mode="after")
    def _rates_ordered(self) -> BudgetConfig:
        self.require_below(
            "degraded_error_rate",
            "unhealthy_error_rate",
            f"must be greater than degraded_error_rate ({self.degraded_error_rate})",
        )
        return self
