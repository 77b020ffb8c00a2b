"""The ``softphone:``, ``asterisk:`` and ``console:`` sections: the local audio device, telephony and the TUI.

The ways a person reaches the engine; each is optional and has defaults that work on a developer machine.
"""

from __future__ import annotations

from pydantic import Field, SecretStr

from engine.config.models.common import Strict


class SoftphoneConfig(Strict):
    input_device: str | int | None = None
    output_device: str | int | None = None
    sample_rate: int = Field(default=16_000, gt=0)
    vad_silence_ms: int = Field(default=600, gt=0)
    push_to_talk: bool = False
    voice: str = "en-us"
    rate: int = Field(default=170, gt=0)
    pitch: int = Field(default=50, ge=0, le=99)
    dictionary: str | None = None


class AsteriskConfig(Strict):
    enabled: bool = False
    ari_url: str = "http://127.0.0.1:8088/ari"
    username: str = "ava"
    password: SecretStr | None = None
    app_name: str = "ava"
    default_context: str | None = None


class ConsoleConfig(Strict):
    keymap: dict[str, str] = Field(default_factory=dict, description="action id -> key, e.g. tier_deep: f3")
