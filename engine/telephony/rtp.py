"""One call's RTP media with Asterisk's external media channel: μ-law in through a small jitter buffer, paced out.

Why it exists: ``externalMedia`` (chan_rtp) sends the caller's audio as RTP to the engine and plays whatever RTP the
engine sends to ``UNICASTRTP_LOCAL_ADDRESS``/``PORT`` as fast as it arrives, so the engine must pace its output
itself (one 160-byte packet per 20 ms on an absolute clock, no drift), keep sequence numbers and timestamps
continuous, and stop within one packet on barge-in. Incoming packets can arrive late, twice, out of order, with
another payload type or not be RTP at all: each is counted and dropped, never raised; short reordering is
repaired in a jitter buffer of a few packets and lost packets become silence so the caller's timeline stays true.
A stream takes RTP from one source only: the address and port Asterisk named in the external-media reply
(``set_remote``; chan_rtp sends from the socket it receives on), else the first packet's; anything from elsewhere
is another host's traffic (or an attack), dropped and counted (``foreign``, and the pool's ``on_foreign``: the
metric), never mixed into the caller's audio. ``PortPool`` hands every call its own port from
``asterisk.rtp_port_start..end``; two calls never share one.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import random
import struct
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import cast

from engine.core.queues import until_closed

log = logging.getLogger(__name__)

PCMU = 0
FRAME_BYTES = 160  # 20 ms of 8 kHz μ-law
FRAME_S = 0.02
ULAW_SILENCE = b"\xff" * FRAME_BYTES
#: Packets held back to repair reordering (60 ms of extra latency at most).
JITTER_DEPTH = 3
#: A gap longer than this many packets is a new talk spurt, not loss: no silence is invented for it.
MAX_CONCEALED = 10


class PortPool:
    """Ports ``start..end`` for RTP, each held by at most one call; a port the OS refuses is skipped. The streams
    bound from one pool are one Stasis app's: ``on_foreign`` hears of each packet they drop for its source."""

    def __init__(self, start: int, end: int, on_foreign: Callable[[], None] | None = None) -> None:
        self.start, self.end = start, end
        self.on_foreign = on_foreign
        self._taken: set[int] = set()
        self._next = start

    def candidates(self) -> list[int]:
        span = self.end - self.start + 1
        order = [self.start + (self._next - self.start + i) % span for i in range(span)]
        return [p for p in order if p not in self._taken]

    def take(self, port: int) -> None:
        self._taken.add(port)
        self._next = port + 1 if port < self.end else self.start

    def release(self, port: int) -> None:
        self._taken.discard(port)

    @property
    def in_use(self) -> int:
        return len(self._taken)


@dataclass
class RtpCounters:
    received: int = 0
    malformed: int = 0
    wrong_payload: int = 0
    late: int = 0
    duplicate: int = 0
    lost: int = 0
    sent: int = 0
    #: Packets from another source than the stream's (dropped).
    foreign: int = 0

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def parse_rtp(data: bytes) -> tuple[int, int, int, int, bytes] | None:
    """``(payload_type, seq, timestamp, ssrc, payload)`` of an RTP packet, or None when it is not one."""
    if len(data) < 12 or data[0] >> 6 != 2:
        return None
    cc, has_ext, padded = data[0] & 0x0F, data[0] & 0x10, data[0] & 0x20
    offset = 12 + 4 * cc
    if has_ext:
        if len(data) < offset + 4:
            return None
        offset += 4 + 4 * struct.unpack_from("!H", data, offset + 2)[0]
    end = len(data) - (data[-1] if padded and data else 0)
    if offset > end:
        return None
    seq, ts, ssrc = struct.unpack_from("!HII", data, 2)
    return data[1] & 0x7F, seq, ts, ssrc, data[offset:end]


def _address(host: str) -> str | None:
    """``host`` as one spelling of its IP address (``[::1]`` and ``::0:1`` alike, an IPv4-mapped IPv6 address as
    its IPv4 one), None for a name."""
    try:
        address = ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
    mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
    return str(mapped or address)


class RtpStream(asyncio.DatagramProtocol):
    """Receive and send one call's μ-law RTP on its own UDP port."""

    def __init__(self, pool: PortPool | None = None) -> None:
        self.counters = RtpCounters()
        self.port = 0
        self.remote: tuple[str, int] | None = None
        #: The one source RTP is taken from (host normalised), once known.
        self.source: tuple[str, int] | None = None
        self._pool = pool
        self._transport: asyncio.DatagramTransport | None = None
        # receive side
        self._buffer: dict[int, bytes] = {}
        self._expected: int | None = None
        self._ssrc: int | None = None
        self._incoming: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=500)
        # send side
        self._out = bytearray()
        self._seq = random.randrange(1 << 16)
        self._ts = random.randrange(1 << 32)
        self._ssrc_out = random.randrange(1 << 32)
        self._wake = asyncio.Event()
        self._drained = asyncio.Event()
        self._drained.set()
        self._progress = asyncio.Event()
        self._sender: asyncio.Task[None] | None = None
        self._closed = False
        self._released = asyncio.Event()

    @classmethod
    async def bind(cls, host: str, pool: PortPool) -> RtpStream:
        """A stream on the first free port of ``pool`` (OSError naming the range when none is free); ``host`` may
        be an IPv6 literal in brackets, as ``asterisk.rtp_host`` writes it."""
        loop = asyncio.get_running_loop()
        local = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        for port in pool.candidates():
            try:
                _, proto = await loop.create_datagram_endpoint(lambda: cls(pool), local_addr=(local, port))
            except OSError:
                continue
            stream = cast(RtpStream, proto)
            stream.port = port
            pool.take(port)
            stream._sender = loop.create_task(stream._send_loop(), name=f"rtp-out:{port}")
            return stream
        raise OSError(f"no free RTP port on {host} in {pool.start}..{pool.end} (asterisk.rtp_port_start/end)")

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.DatagramTransport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._pool is not None and self.port:
            self._pool.release(self.port)  # only now: the socket really let go of the port
        self._released.set()

    def set_remote(self, host: str, port: int) -> None:
        """Where to send the agent's audio: Asterisk's RTP socket, which is also the one source taken from it
        (unless the reply names no usable address: then the first packet's source)."""
        self.remote = (host, port)
        named = _address(host)
        if named is not None and not ipaddress.ip_address(named).is_unspecified:
            self.source = (named, port)
        self._wake.set()

    # ---------------------------------------------------------------------------------------------- receive

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        source = (_address(str(addr[0])) or str(addr[0]), int(addr[1]))
        if self.source is None:
            self.source = source
        elif source != self.source:
            self.counters.foreign += 1
            if self.counters.foreign == 1:
                log.warning(
                    "RTP on :%d from %s:%d dropped: the call's RTP comes from %s:%d", self.port, *source, *self.source
                )
            if self._pool is not None and self._pool.on_foreign is not None:
                self._pool.on_foreign()
            return
        parsed = parse_rtp(data)
        if parsed is None:
            self.counters.malformed += 1
            return
        pt, seq, _, ssrc, payload = parsed
        if pt != PCMU:
            self.counters.wrong_payload += 1
            return
        if not payload:
            self.counters.malformed += 1
            return
        self.counters.received += 1
        if ssrc != self._ssrc:  # a new stream (Asterisk re-bridged the channel): start over
            self._flush_buffer()
            self._ssrc, self._expected = ssrc, seq
        assert self._expected is not None
        ahead = (seq - self._expected) & 0xFFFF
        if ahead >= 0x8000:
            self.counters.late += 1
            return
        if seq in self._buffer:
            self.counters.duplicate += 1
            return
        self._buffer[seq] = payload
        self._release()

    def _release(self) -> None:
        while self._expected is not None:
            payload = self._buffer.pop(self._expected, None)
            if payload is not None:
                self._deliver(payload)
                self._expected = (self._expected + 1) & 0xFFFF
                continue
            if len(self._buffer) <= JITTER_DEPTH:
                return
            # The expected packet is lost: conceal the gap up to the next packet we hold.
            nearest = min(self._buffer, key=lambda s: (s - self._expected) & 0xFFFF)  # type: ignore[operator]
            gap = (nearest - self._expected) & 0xFFFF
            self.counters.lost += gap
            for _ in range(min(gap, MAX_CONCEALED)):
                self._deliver(ULAW_SILENCE)
            self._expected = nearest

    def _flush_buffer(self) -> None:
        for seq in sorted(self._buffer, key=lambda s: (s - (self._expected or 0)) & 0xFFFF):
            self._deliver(self._buffer[seq])
        self._buffer.clear()

    def _deliver(self, payload: bytes) -> None:
        for off in range(0, len(payload), FRAME_BYTES):
            try:
                self._incoming.put_nowait(payload[off : off + FRAME_BYTES])
            except asyncio.QueueFull:  # nobody reads: drop the oldest, keep the newest speech
                self._incoming.get_nowait()
                self._incoming.put_nowait(payload[off : off + FRAME_BYTES])

    def frames(self) -> AsyncIterator[bytes]:
        """The caller's μ-law audio in order, as it arrives, until the stream closes."""
        return until_closed(self._incoming)

    # ---------------------------------------------------------------------------------------------- send

    def queue(self, ulaw: bytes) -> None:
        """Play ``ulaw`` after what is queued; packets go out one per 20 ms."""
        if not ulaw:
            return
        self._out += ulaw
        self._drained.clear()
        self._wake.set()

    @property
    def queued_s(self) -> float:
        return len(self._out) / 8000.0

    def flush(self) -> None:
        """Barge-in: drop everything not sent yet; at most the packet in flight still plays."""
        self._out.clear()
        self._drained.set()
        self._progress.set()

    async def drained(self) -> None:
        await self._drained.wait()

    async def room(self, max_queued_s: float) -> None:
        """Wait until at most ``max_queued_s`` of audio is queued (backpressure for a producer running ahead)."""
        while self.queued_s > max_queued_s and not self._closed:
            self._progress.clear()
            await self._progress.wait()

    async def _send_loop(self) -> None:
        while not self._closed:
            await self._wake.wait()
            self._wake.clear()
            if self.remote is None or not self._out:
                if not self._out:
                    self._drained.set()
                continue
            start = time.monotonic()
            marker = True
            sent = 0
            while self._out and self.remote is not None and not self._closed:
                chunk = bytes(self._out[:FRAME_BYTES]).ljust(FRAME_BYTES, b"\xff")
                del self._out[:FRAME_BYTES]
                self._send(chunk, marker)
                marker = False
                sent += 1
                delay = start + sent * FRAME_S - time.monotonic()
                if delay > 0:
                    await asyncio.sleep(delay)
                elif delay < -0.2:  # the loop stalled: restart the clock instead of bursting to catch up
                    start, sent = time.monotonic(), 0
            if not self._out:
                self._drained.set()

    def _send(self, payload: bytes, marker: bool) -> None:
        if self._transport is None or self.remote is None:
            return
        header = struct.pack("!BBHII", 0x80, (0x80 if marker else 0) | PCMU, self._seq, self._ts, self._ssrc_out)
        self._transport.sendto(header + payload, self.remote)
        self._seq = (self._seq + 1) & 0xFFFF
        self._ts = (self._ts + len(payload)) & 0xFFFFFFFF
        self.counters.sent += 1
        self._progress.set()

    # ---------------------------------------------------------------------------------------------- close

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        self._drained.set()
        self._progress.set()
        if self._sender is not None:
            self._sender.cancel()
        if self._transport is not None:
            self._transport.close()
        else:
            self._released.set()
        with contextlib.suppress(asyncio.QueueFull):
            self._incoming.put_nowait(None)

    async def aclose(self) -> None:
        """Close and wait until the port is free again (and back in the pool)."""
        self.close()
        await self._released.wait()
