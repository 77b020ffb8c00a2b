"""The operator on a live phone call: listen, whisper to either side, take over and hand back, nothing left."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from emulator import AriEmulator

from engine.events import CallEnded, CallMonitorChanged
from engine.telephony.monitor import MonitorError
from engine.voice.audio import AudioFrame
from engine.voice.g711 import ulaw_encode
from tests.engine.telephony.phone import desk_engine, until_quiet
from tests.fixtures.audio_backends import FeedBackend
from tests.waiting import wait_until

NOTHING_UP: dict[str, list[str]] = {"channels": [], "bridges": []}
TONE = ulaw_encode((6000 * np.sin(2 * np.pi * 440 * np.arange(4000) / 8000)).astype(np.int16))


def loud(frames: list[AudioFrame]) -> int:
    return sum(1 for f in frames if np.abs(f.samples.astype(np.int32)).max() > 1000)


async def test_listen_whisper_takeover_and_hand_back(tmp_path: Path) -> None:
    async with AriEmulator() as emu:
        async with desk_engine(emu, tmp_path, 45000) as engine:
            sub = engine.bus.subscribe(maxsize=10_000)
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            await until_quiet(emu, caller.id)
            operator = FeedBackend(sample_rate=16000)

            # listen: a snoop on the caller (both directions) bridged with the operator's media; audio reaches them
            assert await engine.monitor_call(caller.id, "listen", lambda: operator) == "listen"
            snoop = next(c for c in emu.world.channels.values() if c.kind == "snoop")
            assert (snoop.snoop_of, snoop.spy, snoop.whisper) == (caller.id, "both", "none")
            media = next(c for c in emu.world.channels.values() if c.id.startswith("ava-op-"))
            assert sorted(emu.world.bridges[media.bridge or ""].channels) == sorted([snoop.id, media.id])
            await emu.rtp[media.id].speak(TONE, pace=0)  # what Asterisk's snoop hears of the call
            await wait_until(lambda: loud(operator.played) >= 10, what="the call's audio at the listening operator")

            # whisper to the agent: the snoop injects into what the caller sends (the agent hears, the caller not)
            mic = FeedBackend(sample_rate=16000)
            await engine.monitor_call(caller.id, "whisper_agent", lambda: mic)
            snoops = [c for c in emu.world.channels.values() if c.kind == "snoop"]
            assert len(snoops) == 1  # the listen line was torn down before the whisper line opened
            snoop = next(c for c in emu.world.channels.values() if c.kind == "snoop")
            assert snoop.whisper == "in"
            mic.feed((6000 * np.sin(2 * np.pi * 300 * np.arange(8000) / 16000)).astype(np.int16))
            media = next(c for c in emu.world.channels.values() if c.id.startswith("ava-op-"))
            await emu.rtp[media.id].wait_audio(20)  # the operator's voice reaches Asterisk
            await engine.monitor_call(caller.id, "whisper_caller", lambda: FeedBackend())
            assert next(c for c in emu.world.channels.values() if c.kind == "snoop").whisper == "out"

            # take over: the AI leaves the call's bridge and its conversation ends; the operator joins the caller; the
            # call goes on, live under its id (state "operator"), with no call.ended
            (ai_call,) = engine.live_calls()
            await engine.monitor_call(caller.id, "takeover", lambda: FeedBackend())
            bridge = emu.world.bridges[emu.world.channels[caller.id].bridge or ""]
            op_media = next(c for c in bridge.channels if c.startswith("ava-op-"))
            assert sorted(bridge.channels) == sorted([caller.id, op_media])
            assert not any(c.kind == "snoop" for c in emu.world.channels.values())
            await wait_until(
                lambda: engine.calls_info()[0].state == "operator", what="the call in the operator's hands"
            )
            assert [(c.call_id, c.state) for c in engine.calls_info()] == [(ai_call.call_id, "operator")]

            # hand back: the operator leaves, the AI's media rejoins and a new AI conversation goes on with the call
            await engine.monitor_call(caller.id, "off")
            await wait_until(
                lambda: engine.calls_info()[0].state == "active", within=15, what="the AI back on the call"
            )
            assert [(c.call_id, c.state) for c in engine.calls_info()] == [(ai_call.call_id, "active")], "no AI back"
            assert [c for c in bridge.channels if c.startswith("ava-em-")] and not [
                c for c in bridge.channels if c.startswith("ava-op-")
            ]
            seen = sub.drain()
            assert "off" in [e.mode for e in seen if isinstance(e, CallMonitorChanged)]
            assert not [e for e in seen if isinstance(e, CallEnded)]  # one call throughout
            with pytest.raises(MonitorError, match="unknown monitor mode"):
                await engine.monitor_call(caller.id, "shout", lambda: FeedBackend())
            with pytest.raises(MonitorError, match="no live phone call"):
                await engine.monitor_call("nope", "listen", lambda: FeedBackend())
            await emu.caller_hangs_up(caller.id)
            await emu.wait_event("ChannelDestroyed", caller.id)
            await wait_until(lambda: engine.live_calls() == [] and emu.world.leftovers() == NOTHING_UP)
        assert emu.world.leftovers() == NOTHING_UP
        assert emu.violations == []
