"""Telephony timings against the ARI emulator (in-process, loopback): the warm-transfer hand-off and answer latency.

1. **Hand-off**: engine time from the target's ``StasisStart`` (the target answered and its channel entered Stasis)
   to the last ARI request of the hand-off (the agent's channel added to the bridge): the AI's media leaves, the
   AI stops, music stops, the agent joins. The emulator enters created channels into Stasis as Asterisk does:
   after the REST reply, 5–50 ms later at random. The baseline is what a user would write by hand: the same
   requests (originate, wait for the target's StasisStart, remove the AI media channel, add the agent) sent with a
   bare aiohttp client in the same run, timed the same way. Goal (issue 15): ≤ 20 ms p50 for the engine (AVA
   promises < 150 ms total with a real Asterisk). The whole tool call → agent bridged, which includes the
   emulator's Stasis delay, is printed too.
2. **Answer latency on the phone** (offline pipeline, the demo context): the caller says "hello" over RTP; from the
   moment the endpointer closed the utterance to the first RTP packet of the answer arriving at the phone. Goal:
   ≤ 300 ms p50. The endpointer's own silence (``softphone.vad_silence_ms``) is not counted, as in voice_loop.py.

    .venv/bin/python bench/transfer.py [--transfers 20] [--calls 6]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "fixtures" / "ari"))

from emulator import AriEmulator  # noqa: E402
from pydantic import SecretStr  # noqa: E402

from engine.app import Engine  # noqa: E402
from engine.config import load_settings  # noqa: E402
from engine.config.models import AsteriskConfig, ContextConfig, ProviderConfig  # noqa: E402
from engine.config.models.tools import TransferTarget  # noqa: E402
from engine.core.stats import percentiles  # noqa: E402
from engine.telephony.component import Telephony  # noqa: E402
from engine.voice.g711 import ulaw_encode  # noqa: E402
from engine.voice.tts import Synthesizer  # noqa: E402

DEMO = ROOT / "config" / "default.yaml"
DESK = ROOT / "tests" / "engine" / "telephony" / "scripts" / "desk.yaml"
AUTH = {"Authorization": aiohttp.encode_basic_auth("ava", "ari-secret")}


def settings_for(emu: AriEmulator, data_dir: Path, context: str) -> Any:
    settings = load_settings(DEMO)
    memory = settings.mcp.servers["memory"]
    memory.args = [*(memory.args or []), "--db", str(data_dir / "memory.db")]
    settings.providers["desk"] = ProviderConfig(type="scripted", script=str(DESK))
    settings.contexts["desk"] = ContextConfig(provider="desk", prompt="A help desk.", tools=["transfer"])
    settings.tools.extensions = {"support": TransferTarget(destination="PJSIP/6000")}
    settings.asterisk = AsteriskConfig(
        enabled=True,
        ari_url=emu.url,
        password=SecretStr("ari-secret"),
        default_context=context,
        rtp_port_start=44000,
        rtp_port_end=44999,
    )
    return settings


async def engine_handoffs(n: int, data_dir: Path) -> tuple[list[float], list[float]]:
    """(hand-off: target's StasisStart → agent added, tool call → agent added) per transfer, in ms."""
    out: list[float] = []
    whole: list[float] = []
    async with AriEmulator() as emu:
        emu.ring_s = 0.0
        async with Engine(settings_for(emu, data_dir, "desk"), config_path=DEMO) as engine:
            await emu.wait_subscribers()
            telephony = next(c for c in engine.components if isinstance(c, Telephony))
            for _ in range(n):
                caller = await emu.incoming_call("ava")
                session = await live_session(telephony, caller.id)
                session.shown_tools = frozenset({"transfer"})
                start = len(emu.world.requests)
                t0 = time.perf_counter()
                result = await engine.execute_tool(session, "transfer", {"destination": "support"})
                assert result.status == "success", result.message
                answered = await emu.wait_event("StasisStart", name_prefix="PJSIP/6000", start=len(emu.events) - 3)
                entered = entered_at(emu, answered["channel"]["id"])
                agent = answered["channel"]["id"]
                await emu.wait_event("ChannelEnteredBridge", agent)
                last = max(
                    i
                    for i, (m, p, q) in enumerate(emu.world.requests)
                    if i >= start and p.endswith("/addChannel") and agent in q.get("channel", [])
                )
                out.append((emu.world.request_times[last] - entered) * 1000)
                whole.append((emu.world.request_times[last] - t0) * 1000)
                await emu.caller_hangs_up(agent)
                await emu.wait_event("ChannelDestroyed", caller.id)
            assert emu.violations == [], emu.violations
            assert not [r for r in emu.refusals if " 422 " in r], emu.refusals
    return out, whole


async def live_session(telephony: Telephony, channel_id: str) -> Any:
    """The engine's call session of the phone call on ``channel_id``, once its voice driver started it."""
    for _ in range(400):
        call = telephony.app.calls.get(channel_id) if telephony.app else None
        if call is not None and call.voice is not None and call.voice.session is not None:
            await call.voice.started.wait()
            await asyncio.sleep(0.01)  # the call's line is registered for the transfer tools right after
            return call.voice.session
        await asyncio.sleep(0.01)
    raise TimeoutError(f"no call for {channel_id}")


async def raw_handoffs(n: int) -> list[float]:
    """The same ARI requests by hand: what the engine's hand-off is compared with."""
    out: list[float] = []
    async with AriEmulator() as emu, aiohttp.ClientSession(headers=AUTH) as http:
        emu.ring_s = 0.0
        ws = await http.ws_connect(emu.url.replace("http", "ws") + "/events?app=ava")
        for i in range(n):
            caller = await emu.incoming_call("ava")
            async with http.post(emu.url + "/bridges", params={"type": "mixing"}) as r:
                bridge = (await r.json())["id"]
            async with http.post(
                emu.url + "/channels/externalMedia",
                params={"app": "ava", "external_host": "127.0.0.1:9", "format": "ulaw", "channelId": f"em-{i}"},
            ) as r:
                media = (await r.json())["id"]
            await stasis_start(ws, media)
            async with http.post(f"{emu.url}/bridges/{bridge}/addChannel", params={"channel": f"{caller.id},{media}"}):
                pass
            async with http.post(
                emu.url + "/channels",
                params={"endpoint": "PJSIP/6000", "app": "ava", "appArgs": "transfer", "channelId": f"x-{i}"},
            ):
                pass
            await stasis_start(ws, f"x-{i}")
            entered = entered_at(emu, f"x-{i}")
            async with http.post(f"{emu.url}/bridges/{bridge}/removeChannel", params={"channel": media}):
                pass
            async with http.post(f"{emu.url}/bridges/{bridge}/addChannel", params={"channel": f"x-{i}"}):
                pass
            out.append((emu.world.request_times[-1] - entered) * 1000)
            for path in (f"/channels/{media}", f"/channels/x-{i}", f"/channels/{caller.id}", f"/bridges/{bridge}"):
                async with http.delete(emu.url + path):
                    pass
        await ws.close()
        assert emu.violations == [] and emu.refusals == [], (emu.violations, emu.refusals)
    return out


def entered_at(emu: AriEmulator, channel_id: str) -> float:
    """When the emulator sent the StasisStart of ``channel_id``."""
    return next(
        t
        for e, t in zip(emu.events, emu.event_times, strict=True)
        if e["type"] == "StasisStart" and e["channel"]["id"] == channel_id
    )


async def stasis_start(ws: aiohttp.ClientWebSocketResponse, channel_id: str) -> None:
    async for msg in ws:
        if '"StasisStart"' in msg.data and f'"{channel_id}"' in msg.data:
            return
    raise ConnectionError(f"the events socket closed before {channel_id} entered Stasis")


async def answer_latency(calls: int, data_dir: Path, hello: bytes) -> list[float]:
    out: list[float] = []
    async with AriEmulator() as emu:
        async with Engine(settings_for(emu, data_dir, "demo"), config_path=DEMO) as engine:
            await emu.wait_subscribers()
            telephony = next(c for c in engine.components if isinstance(c, Telephony))
            for _ in range(calls):
                caller = await emu.incoming_call("ava", "Robin")
                await emu.wait_event("ChannelEnteredBridge", caller.id)
                phone = emu.media_for(caller.id)
                await phone.wait_audio(100, within_s=20)  # the greeting is playing
                await phone.silence(4.0)  # … and over
                assert telephony.app is not None
                voice = telephony.app.calls[caller.id].voice
                assert voice is not None
                heard = len(phone.capture)
                await phone.speak(hello)
                await phone.silence(2.0)
                turn = voice.turns[-1]
                first = next(p.arrived for p in phone.capture[heard:] if p.arrived > turn.utterance_end)
                out.append((first - turn.utterance_end) * 1000)
                await emu.caller_hangs_up(caller.id)
                await emu.wait_event("ChannelDestroyed", caller.id)
    return out


def row(name: str, values: list[float]) -> tuple[float, float]:
    p50, p99 = percentiles(values, 0.5, 0.99)
    print(f"  {name:34} p50 {p50:7.2f} ms   p99 {p99:7.2f} ms   (n={len(values)})")
    return p50, p99


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--transfers", type=int, default=20)
    ap.add_argument("--calls", type=int, default=6)
    args = ap.parse_args()
    hello = ulaw_encode(Synthesizer(voice="en-us", rate=170, sample_rate=8000).synthesize_blocking("hello").samples)
    with tempfile.TemporaryDirectory() as tmp:
        print("warm-transfer hand-off (target's StasisStart → agent added), Stasis entry 5–50 ms after the reply:")
        handoffs, whole = await engine_handoffs(args.transfers, Path(tmp))
        engine_p50, _ = row("engine (transfer tool)", handoffs)
        raw_p50, _ = row("the same requests by hand (aiohttp)", await raw_handoffs(args.transfers))
        print(f"  engine / by hand: {engine_p50 / raw_p50:.2f}×; goal ≤ 20 ms p50 for the engine")
        row("engine, tool call → agent added", whole)
        print("  (includes the target's ring and Stasis entry: 0 ms + 5–50 ms in the emulator)")
        print("answer latency on the phone (endpointer closed → first RTP packet of the answer), demo pipeline:")
        row("offline pipeline over RTP", await answer_latency(args.calls, Path(tmp), hello))
        print("  goal ≤ 300 ms p50")


if __name__ == "__main__":
    asyncio.run(main())
