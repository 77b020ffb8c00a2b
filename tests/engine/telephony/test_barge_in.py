"""Barge-in on a phone call, on both media paths: the caller starts talking while the agent speaks, and the
agent's audio stops reaching the caller within 100 ms of the caller's speech onset (issue 15).

Measured on Asterisk's side (the emulator), in one clock: from the moment the first packet/frame of the
caller's interruption left the phone to the moment the last packet of the agent's greeting reached it (RTP:
arrival at the RTP peer; WebSocket: the frame leaving chan_websocket's playout queue). The interruption is
trimmed to start on voiced audio, so the onset is its first packet.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest
from emulator import AriEmulator
from pydantic import SecretStr

from engine.app import Engine
from engine.config.models import AsteriskConfig
from engine.voice.g711 import ulaw_decode
from tests.engine.telephony.phone import loud_seconds, speech
from tests.engine.voice.helpers import DEMO_CONFIG, demo_settings

BOUND_S = 0.100


def voiced(ulaw: bytes) -> bytes:
    """``ulaw`` from its first loud 20 ms frame on (espeak starts with a little silence)."""
    pcm = np.abs(ulaw_decode(ulaw).astype(np.int32))
    frames = pcm[: pcm.size // 160 * 160].reshape(-1, 160).max(axis=1)
    first = int(np.argmax(frames > 1000))
    return ulaw[first * 160 :]


@pytest.mark.parametrize("media", ["rtp", "websocket"])
async def test_caller_talking_over_the_greeting_cuts_it_within_100_ms(tmp_path: Path, media: str) -> None:
    interruption = voiced(speech("Actually, I am calling about my order."))
    async with AriEmulator() as emu:
        settings = demo_settings(tmp_path)
        settings.asterisk = AsteriskConfig(
            enabled=True,
            ari_url=emu.url,
            password=SecretStr("ari-secret"),
            default_context="demo",
            media=media,  # type: ignore[arg-type]
            rtp_port_start=41300,
            rtp_port_end=41399,
        )
        async with Engine(settings, config_path=DEMO_CONFIG):
            await emu.wait_subscribers()
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            phone = emu.media_for(caller.id)
            await phone.wait_audio(75, within_s=15)  # 1.5 s into an 8 s greeting
            assert loud_seconds(phone.audio()[-1600:]) > 0  # the agent is talking
            onset = time.perf_counter()  # speak() sends its first packet before it first awaits
            await phone.speak(interruption)
            await phone.silence(0.3)
            spoke_until = time.perf_counter()
            await emu.caller_hangs_up(caller.id)
            await emu.wait_event("ChannelDestroyed", caller.id, within_s=10)

        before = [p.arrived for p in phone.capture if p.arrived < onset]
        # everything the agent sent while the caller talked (its answer comes only after the caller stopped)
        during = [p.arrived for p in phone.capture if onset <= p.arrived < spoke_until]
        assert before and onset - before[-1] < 0.06  # the greeting was still flowing when the caller spoke
        cut_s = (during[-1] if during else before[-1]) - onset
        print(f"barge-in on {media}: last agent audio {1000 * cut_s:.0f} ms after the caller's onset")
        assert cut_s <= BOUND_S, f"{media}: the agent was still heard {1000 * cut_s:.0f} ms after the caller spoke"
        assert phone.stream_issues() == []
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []
