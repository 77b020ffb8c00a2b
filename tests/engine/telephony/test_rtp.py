"""RTP media: order repaired, bad packets counted and dropped, paced continuous output, flush on barge-in."""

from __future__ import annotations

import asyncio
import struct

import pytest
from rtp_peer import RtpPeer

from engine.telephony.rtp import FRAME_BYTES, ULAW_SILENCE, PortPool, RtpStream, parse_rtp
from tests.waiting import wait_until


def packet(seq: int, payload: bytes, pt: int = 0, ssrc: int = 7) -> bytes:
    return struct.pack("!BBHII", 0x80, pt, seq & 0xFFFF, seq * 160, ssrc) + payload


async def collect(stream: RtpStream, n: int) -> list[bytes]:
    out: list[bytes] = []
    async with asyncio.timeout(5):
        async for f in stream.frames():
            out.append(f)
            if len(out) == n:
                return out
    return out


async def test_reorder_duplicates_late_loss_and_garbage() -> None:
    pool = PortPool(40000, 40100)
    stream = await RtpStream.bind("127.0.0.1", pool)
    peer = await RtpPeer.open()
    peer.target = ("127.0.0.1", stream.port)
    frames = {s: bytes([s % 256]) * FRAME_BYTES for s in range(65530, 65546)}  # crosses the 16-bit wrap
    order = [65530, 65532, 65532, 65531, 65533, 65534, 65530]  # reordered, a duplicate, a late one
    order += [65536, 65537, 65538, 65539, 65540]  # 65535 is lost
    for s in order:
        peer.send_raw(packet(s, frames[s]))
    peer.send_raw(b"\x00garbage")  # not RTP
    peer.send_raw(packet(65541, frames[65541], pt=8))  # A-law: wrong payload type
    got = await collect(stream, 6)
    # The garbage went out last: once another good packet got through, the garbage has been counted.
    peer.send_raw(packet(65541, frames[65541]))
    rest = await collect(stream, 6)
    assert rest == [frames[s] for s in range(65536, 65542)]
    assert got[:5] == [frames[s] for s in (65530, 65531, 65532, 65533, 65534)]
    assert got[5] == ULAW_SILENCE  # the lost packet, concealed so the timeline stays true
    c = stream.counters
    assert (c.duplicate, c.late, c.lost, c.malformed, c.wrong_payload) == (1, 1, 1, 1, 1)
    await stream.aclose()
    peer.close()
    assert pool.in_use == 0


async def test_paced_output_is_continuous_and_flush_stops_it() -> None:
    stream = await RtpStream.bind("127.0.0.1", PortPool(40200, 40300))
    phone = await RtpPeer.open()
    stream.set_remote("127.0.0.1", phone.port)
    stream.queue(b"\x01" * (FRAME_BYTES * 5 + 10))  # a partial last packet is padded with silence
    await stream.drained()
    await phone.wait_audio(6)
    assert phone.stream_issues() == []
    assert phone.capture[0].marker and not any(p.marker for p in phone.capture[1:])
    assert phone.audio()[: FRAME_BYTES * 5 + 10] == b"\x01" * (FRAME_BYTES * 5 + 10)
    before = len(phone.capture)
    stream.queue(b"\x02" * FRAME_BYTES * 100)  # two seconds
    await phone.wait_audio(before + 2)
    stream.flush()
    await stream.drained()
    stream.queue(b"\x03" * FRAME_BYTES)  # the later marker: once it is in, whatever came before it is too
    marker = b"\x03" * FRAME_BYTES
    await wait_until(lambda: any(p.payload == marker for p in phone.capture), what="the marker packet")
    sent = [p.payload for p in phone.capture[before:]]
    assert len(sent[: sent.index(marker)]) <= 4  # nothing after the packet in flight
    stream.close()
    phone.close()


async def test_calls_never_share_ports_and_exhaustion_is_clear() -> None:
    pool = PortPool(40400, 40401)
    a = await RtpStream.bind("127.0.0.1", pool)
    b = await RtpStream.bind("127.0.0.1", pool)
    assert {a.port, b.port} == {40400, 40401}
    with pytest.raises(OSError, match=r"no free RTP port on 127\.0\.0\.1 in 40400\.\.40401"):
        await RtpStream.bind("127.0.0.1", pool)
    await a.aclose()
    c = await RtpStream.bind("127.0.0.1", pool)
    assert c.port == 40400
    await b.aclose()
    await c.aclose()
    assert pool.in_use == 0


def test_parse_rtp_bounds() -> None:
    assert parse_rtp(b"") is None
    assert parse_rtp(bytes([0x40]) + bytes(11)) is None  # version 1
    assert parse_rtp(bytes([0x90, 0]) + bytes(10)) is None  # extension header missing
    assert parse_rtp(bytes([0x81, 0]) + bytes(10)) is None  # one CSRC announced, none there
    assert parse_rtp(packet(1, b"\x05" * 4)) == (0, 1, 160, 7, b"\x05" * 4)
