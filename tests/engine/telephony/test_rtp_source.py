"""RTP from one source only: a call's stream is locked to the address Asterisk sends from (the external-media
reply's ``UNICASTRTP_LOCAL_ADDRESS``/``PORT``, else the first packet's source); packets from anywhere else are
dropped, counted on the stream and in ``ai_agent_rtp_foreign_packets_total``, and never reach the caller's audio."""

from __future__ import annotations

import asyncio
from pathlib import Path

from emulator import AriEmulator
from rtp_peer import RtpPeer

from engine.telephony.component import Telephony
from engine.telephony.rtp import FRAME_BYTES, PortPool, RtpStream
from tests.engine.telephony.phone import desk_engine, speech, until_quiet


async def collect(stream: RtpStream, n: int) -> list[bytes]:
    out: list[bytes] = []
    async with asyncio.timeout(5):
        async for f in stream.frames():
            out.append(f)
            if len(out) == n:
                break
    return out


async def test_the_stream_takes_only_the_source_the_external_media_reply_named() -> None:
    foreign: list[int] = []
    pool = PortPool(40600, 40620)
    pool.on_foreign = lambda: foreign.append(1)
    stream = await RtpStream.bind("127.0.0.1", pool)
    asterisk, intruder = await RtpPeer.open(), await RtpPeer.open()
    asterisk.target = intruder.target = ("127.0.0.1", stream.port)
    stream.set_remote("127.0.0.1", asterisk.port)
    await intruder.speak(b"\x11" * FRAME_BYTES * 3, pace=0)  # first, so a first-packet lock would take it
    await asterisk.speak(b"\x22" * FRAME_BYTES * 2, pace=0)
    assert await collect(stream, 2) == [b"\x22" * FRAME_BYTES] * 2  # the intruder's went before these
    assert (stream.counters.foreign, stream.counters.received, len(foreign)) == (3, 2, 3)
    await stream.aclose()
    asterisk.close()
    intruder.close()


async def test_without_a_named_source_the_first_packets_source_is_the_one() -> None:
    stream = await RtpStream.bind("127.0.0.1", PortPool(40630, 40640))
    first, second = await RtpPeer.open(), await RtpPeer.open()
    first.target = second.target = ("127.0.0.1", stream.port)
    await first.speak(b"\x33" * FRAME_BYTES, pace=0)
    assert await collect(stream, 1) == [b"\x33" * FRAME_BYTES]
    await second.speak(b"\x44" * FRAME_BYTES * 2, pace=0)
    await first.speak(b"\x55" * FRAME_BYTES, pace=0)
    assert await collect(stream, 1) == [b"\x55" * FRAME_BYTES]
    assert (stream.counters.foreign, stream.counters.received) == (2, 2)
    await stream.aclose()
    first.close()
    second.close()


async def test_a_phone_call_drops_rtp_from_a_stranger_and_counts_it(tmp_path: Path) -> None:
    goodbye = speech("goodbye")
    async with AriEmulator() as emu:
        async with desk_engine(emu, tmp_path, 43000) as engine:
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            await until_quiet(emu, caller.id)
            phone = emu.media_for(caller.id)
            assert isinstance(phone, RtpPeer)
            telephony = next(c for c in engine.components if isinstance(c, Telephony))
            assert telephony.app is not None
            stream = telephony.app.calls[caller.id].stream
            assert isinstance(stream, RtpStream)
            stranger = await RtpPeer.open()
            stranger.target = phone.target  # the engine's RTP port, from another socket
            await stranger.speak(b"\x00" * FRAME_BYTES * 25, pace=0)  # loud
            await phone.silence(0.3)
            await phone.speak(goodbye)
            await phone.silence(1.5)
            await emu.wait_event("ChannelDestroyed", caller.id, within_s=20)  # the goodbye was heard: all are in
            assert stream.counters.foreign == 25
            assert stream.counters.received == phone.sent_packets  # the stranger's are not among them
            value = engine.metrics.registry.get_sample_value("ai_agent_rtp_foreign_packets_total")
            assert value == 25
            stranger.close()
        assert emu.violations == []


async def test_an_ipv6_stream_binds_the_bracketed_rtp_host_and_knows_its_source_by_address() -> None:
    stream = await RtpStream.bind("[::1]", PortPool(40650, 40660))  # as asterisk.rtp_host writes it
    asterisk, intruder = await RtpPeer.open("::1"), await RtpPeer.open("::1")
    asterisk.target = intruder.target = ("::1", stream.port)
    stream.set_remote("0:0:0:0:0:0:0:1", asterisk.port)  # another spelling of the same address
    await intruder.speak(b"\x11" * FRAME_BYTES, pace=0)
    await asterisk.speak(b"\x22" * FRAME_BYTES, pace=0)
    assert await collect(stream, 1) == [b"\x22" * FRAME_BYTES]
    assert stream.counters.foreign == 1
    await stream.aclose()
    asterisk.close()
    intruder.close()
