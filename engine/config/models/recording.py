"""The ``recording:`` section: the flight recorder (every call's events as JSON lines, its audio as WAV).

A section of its own because it is about what the engine keeps after a call, not how calls run: where the
recordings go, whether audio is kept, and the retention limits the recorder enforces at start and periodically.
"""

from __future__ import annotations

from pydantic import Field

from engine.config.models.common import Strict


class RecordingConfig(Strict):
    """Where and how long the flight recorder keeps calls (``engine.recorder``)."""

    enabled: bool = Field(default=True, description="Record every call (events as JSON lines, audio as WAV).")
    dir: str | None = Field(
        default=None,
        description="Folder for the recordings (relative to the config file's folder); "
        "default: 'recordings' in the user data folder.",
    )
    audio: bool = Field(default=True, description="Also keep the caller's and the agent's audio of voice calls.")
    max_age_days: float = Field(default=30.0, gt=0, description="Recordings older than this are deleted.")
    max_total_mb: float = Field(
        default=500.0, gt=0, description="When the recordings take more than this, the oldest are deleted."
    )
    retention_interval_s: float = Field(
        default=600.0, ge=10, description="How often the retention limits are enforced while the engine runs."
    )
    queue_size: int = Field(
        default=20_000,
        ge=100,
        description="Events and audio pieces waiting for the writer; beyond it the newest "
        "are dropped and counted, so a slow disk never slows a call.",
    )
