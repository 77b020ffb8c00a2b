"""Shared set-up for phone-call tests: an engine on the emulator with the help-desk context, and a caller's voice."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Literal

import numpy as np
from emulator import AriEmulator
from pydantic import SecretStr

from engine.app import Engine
from engine.config.models import AsteriskConfig, ContextConfig, ProviderConfig
from engine.config.models.tools import TransferTarget
from engine.tools.base import Tool
from engine.voice.g711 import ulaw_decode, ulaw_encode
from engine.voice.tts import Synthesizer
from tests.engine.voice.helpers import DEMO_CONFIG, demo_settings

SCRIPT = Path(__file__).resolve().parent / "scripts" / "desk.yaml"


def speech(text: str) -> bytes:
    """``text`` as a caller says it on the phone (8 kHz μ-law); synthesise before the engine runs its own TTS."""
    return ulaw_encode(Synthesizer(voice="en-us", rate=170, sample_rate=8000).synthesize_blocking(text).samples)


def loud_seconds(ulaw: bytes) -> float:
    """Seconds of audio above a quiet threshold, in 20 ms windows."""
    pcm = ulaw_decode(ulaw).astype(np.int32)
    windows = pcm[: pcm.size // 160 * 160].reshape(-1, 160)
    return float((np.abs(windows).max(axis=1) > 300).sum() * 0.02)


@asynccontextmanager
async def desk_engine(
    emu: AriEmulator,
    tmp_path: Path,
    ports: int,
    extra_tools: list[Tool] | None = None,
    password: str = "ari-secret",
    media: Literal["rtp", "websocket"] = "rtp",
    provider: ProviderConfig | None = None,
) -> AsyncIterator[Engine]:
    """The engine on ``emu`` with the help desk context: the scripted desk, or ``provider`` (a loopback fake)
    with a fixed greeting."""
    settings = demo_settings(tmp_path)
    settings.providers["desk"] = provider or ProviderConfig(type="scripted", script=str(SCRIPT))
    settings.contexts["desk"] = ContextConfig(
        provider="desk",
        prompt="A help desk.",
        greeting=None if provider is None else "Help desk.",
        tools=["transfer", "blind_transfer", "cancel_transfer", "hangup_call"],
    )
    settings.tools.extensions = {
        "support": TransferTarget(
            description="the support team", destination="PJSIP/6000", aliases=["agent"], timeout_s=60
        ),  # rings on while a loaded machine hears "cancel the transfer"
        "sales": TransferTarget(destination="PJSIP/6001", timeout_s=3),
    }
    settings.asterisk = AsteriskConfig(
        enabled=True,
        ari_url=emu.url,
        password=SecretStr(password),
        default_context="desk",
        rtp_port_start=ports,
        rtp_port_end=ports + 99,
        media=media,
    )
    if extra_tools:
        settings.contexts["desk"].tools.extend(t.name for t in extra_tools)
    async with Engine(settings, config_path=DEMO_CONFIG, extra_tools=extra_tools) as engine:
        if password == emu.password:
            await emu.wait_subscribers()
        yield engine


async def until_quiet(emu: AriEmulator, caller: str, within_s: float = 20) -> None:
    """Wait until the agent has finished speaking to the caller (a quiet 200 ms after some audio)."""
    phone = emu.media_for(caller)
    await phone.wait_audio(len(phone.capture) + 10, within_s=within_s)
    while loud_seconds(phone.audio()[-1600:]) > 0:
        await phone.wait_audio(len(phone.capture) + 5, within_s=within_s)
