"""The engine's side of chan_websocket media against Asterisk's side (the emulator's ``WsPeer``) on loopback:
flow control, barge-in flush, marks as "played out", both control formats, and what Asterisk should never send."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import pytest
from aiohttp import web
from ws_peer import WsPeer

from engine.telephony.ws_media import WsMedia, WsMediaError, media_url, parse_message


@asynccontextmanager
async def serving(handler: Callable[[web.WebSocketResponse], Awaitable[None]]) -> AsyncIterator[str]:
    """A loopback HTTP server whose ``/media/<id>`` hands the upgraded socket to ``handler``; yields its ws URL."""

    async def upgrade(request: web.Request) -> web.StreamResponse:
        ws = web.WebSocketResponse(protocols=("media",))
        await ws.prepare(request)
        await handler(ws)
        return ws

    app = web.Application()
    app.router.add_get("/media/{cid}", upgrade)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    try:
        yield f"ws://127.0.0.1:{port}/media/conn-1"
    finally:
        await runner.cleanup()


@asynccontextmanager
async def connected(peer: WsPeer) -> AsyncIterator[WsMedia]:
    async with serving(peer.serve) as url:
        media = await WsMedia.connect(url, timeout_s=5)
        try:
            yield media
        finally:
            await media.aclose()
            peer.close()


def numbered(n: int) -> list[bytes]:
    """``n`` distinct 20 ms μ-law frames, so order and loss are visible in the capture."""
    return [bytes([i % 200 + 20]) * 160 for i in range(n)]


@pytest.mark.parametrize("json_format", [False, True], ids=["plain-text", "json"])
async def test_xoff_stops_sending_xon_resumes_and_nothing_is_lost(json_format: bool) -> None:
    peer = WsPeer("conn-1", "ch-1", "WebSocket/INCOMING/0x1", json_format=json_format)
    peer.xoff_level, peer.xon_level = 20, 10
    peer.paused = True  # Asterisk's queue does not move (PAUSE_MEDIA, a stalled bridge)
    frames = numbered(100)
    async with connected(peer) as media:
        assert (media.json, media.frame_bytes, media.format) == (json_format, 160, "ulaw")
        media.queue(b"".join(frames))
        await asyncio.sleep(0.3)
        assert (
            media.counters.xoff == 1 and peer.queued < 30
        )  # the engine stopped soon after MEDIA_XOFF instead of filling Asterisk's queue
        peer.paused = False
        async with asyncio.timeout(10):
            await media.drained()
        assert [f.payload for f in peer.capture] == frames  # in order, none dropped; drained means all played
        assert peer.xoff_sent >= 1 and peer.xon_sent >= 1
        assert peer.stream_issues() == []
        assert "MARK_MEDIA" in peer.commands


async def test_flush_empties_asterisks_queue_and_releases_drained() -> None:
    peer = WsPeer("conn-1", "ch-1", "WebSocket/INCOMING/0x1")
    async with connected(peer) as media:
        media.queue(b"".join(numbered(100)))
        waiter = asyncio.create_task(media.drained())
        await peer.wait_audio(10)
        media.flush()
        async with asyncio.timeout(2):
            await waiter  # the mark went with the flushed audio: nobody waits for it forever
        heard = len(peer.capture)
        media.queue(b"\x10" * 330)  # a new answer after the barge-in, not a whole number of frames
        async with asyncio.timeout(5):
            await media.drained()
        # the new answer is the later marker: what was still sent of the flushed one came before it
        after_flush = [f.payload[:1] for f in peer.capture[heard:]]
        assert after_flush.index(b"\x10") <= 2 and peer.queued == 0
        assert peer.commands.count("FLUSH_MEDIA") == 1
        assert peer.capture[-1].payload == b"\x10" * 10 + b"\xff" * 150  # the last piece padded, not dropped
        assert peer.stream_issues() == []


async def test_what_asterisk_should_not_send_is_counted_and_ignored() -> None:
    dtmf: list[str] = []

    async def odd_asterisk(ws: web.WebSocketResponse) -> None:
        await ws.send_bytes(b"\x01" * 160)  # audio before MEDIA_START
        await ws.send_str("{not json")
        await ws.send_str("X" * 5000)
        await ws.send_str(
            "MEDIA_START connection_id:c1 channel:WebSocket/INCOMING/0x2 channel_id:ch-2 "
            "format:ulaw optimal_frame_size:160 ptime:20"
        )
        await ws.send_str("SOMETHING_NEW a:b")
        await ws.send_str("DTMF_END digit:5 channel_id:ch-2")
        await ws.send_str("ERROR channel_id:ch-2 error_text:nope")
        await ws.send_bytes(b"\x02" * 160)
        await ws.receive()  # until the engine closes

    async with serving(odd_asterisk) as url:
        media = await WsMedia.connect(url, on_dtmf=dtmf.append)
        frames = media.frames()
        async with asyncio.timeout(5):
            assert await anext(frames) == b"\x02" * 160
        assert media.counters.ignored == 4 and media.counters.errors == ["nope"]
        assert dtmf == ["5"] and media.channel_id == "ch-2"
        await media.aclose()
        assert [f async for f in frames] == []  # closed: the caller's audio ends


async def test_a_socket_that_never_starts_or_carries_another_format_is_a_clear_error() -> None:
    async def silent(ws: web.WebSocketResponse) -> None:
        await ws.receive()

    async def alaw(ws: web.WebSocketResponse) -> None:
        await ws.send_str('{"event":"MEDIA_START","connection_id":"c","format":"alaw","optimal_frame_size":160}')
        await ws.receive()

    async with serving(silent) as url:
        with pytest.raises(WsMediaError, match=re.escape("no MEDIA_START within 0.3 s")):
            await WsMedia.connect(url, timeout_s=0.3)
    async with serving(alaw) as url:
        with pytest.raises(WsMediaError, match="'alaw'"):
            await WsMedia.connect(url)
    with pytest.raises(WsMediaError, match=re.escape("cannot open the media WebSocket ws://127.0.0.1:9/media/x")):
        await WsMedia.connect("ws://127.0.0.1:9/media/x", timeout_s=1)


def test_media_url_sits_beside_ari_and_events_parse_in_both_formats() -> None:
    assert media_url("http://pbx:8088/ari", "a b") == "ws://pbx:8088/media/a%20b"
    assert media_url("https://pbx/asterisk/ari/", "u1") == "wss://pbx/asterisk/media/u1"
    assert parse_message("MEDIA_MARK_PROCESSED 7") == {"event": "MEDIA_MARK_PROCESSED", "correlation_id": "7"}
    assert parse_message('{"event":"MEDIA_XOFF","channel_id":"c"}') == {"event": "MEDIA_XOFF", "channel_id": "c"}
    assert parse_message("MEDIA_START format:ulaw ptime:20") == {
        "event": "MEDIA_START",
        "format": "ulaw",
        "ptime": "20",
    }
    assert parse_message("") is None and parse_message("[1]") is None and parse_message("no-good! x") is None
