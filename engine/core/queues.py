"""``until_closed``: read a queue that a ``None`` closes, the one way every stream of the engine reads its queue.

Why it exists: the realtime sessions' events and the telephony media streams' frames each wrote the same loop, and
two of the four put the ``None`` back for the next reader while the other two did not (a second reader of a closed
media stream waited for ever). One loop, one behaviour.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import TypeVar

T = TypeVar("T")


async def until_closed(queue: asyncio.Queue[T | None]) -> AsyncIterator[T]:
    """``queue``'s items in order until its ``None``, which is put back so that every later reader ends too."""
    while (item := await queue.get()) is not None:
        yield item
    queue.put_nowait(None)  # room for it: the reader just took it, with no await since
