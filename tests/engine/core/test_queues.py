"""``until_closed``: a queue's items in order until the ``None`` that closes it, and every later reader ends too
(the realtime sessions' events and the telephony media streams' frames all read their queues this one way)."""

from __future__ import annotations

import asyncio

from engine.core.queues import until_closed
from engine.telephony.rtp import RtpStream


async def test_items_come_in_order_until_the_end_and_a_second_reader_ends_too() -> None:
    queue: asyncio.Queue[int | None] = asyncio.Queue()
    for item in (1, 2, None):
        queue.put_nowait(item)
    assert [i async for i in until_closed(queue)] == [1, 2]
    assert [i async for i in until_closed(queue)] == []  # not left waiting for an end that was taken


async def _frames(stream: RtpStream) -> list[bytes]:
    return [f async for f in stream.frames()]


async def test_a_closed_rtp_stream_ends_every_reader_of_its_frames() -> None:
    stream = RtpStream()
    stream.close()
    assert await asyncio.wait_for(_frames(stream), 5) == []
    assert await asyncio.wait_for(_frames(stream), 5) == []  # a second reader is not left waiting
