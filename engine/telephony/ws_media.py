"""One call's media over Asterisk's WebSocket channel (chan_websocket): the caller's μ-law in, the agent's out.

Why it exists: with ``asterisk.media: websocket`` the engine asks ``externalMedia`` for ``transport=websocket``,
``encapsulation=none``, ``connection_type=server``: Asterisk creates ``WebSocket/INCOMING/…`` and waits for the
app to connect to its own HTTP server at ``/media/<MEDIA_WEBSOCKET_CONNECTION_ID>`` (sub-protocol ``media``); in
``client`` mode Asterisk connects out instead, and ``WsMedia`` wraps that accepted socket the same way. Asterisk
speaks first with ``MEDIA_START`` (connection id, format, ``optimal_frame_size``, ``ptime``), in plain text or
JSON (``f(json)`` / ``chan_websocket.conf``); commands are answered in the format ``MEDIA_START`` used.

Unlike RTP, Asterisk paces what it plays: binary frames go into its queue (whole ``optimal_frame_size`` frames —
a partial one is dropped outside bulk mode, so the last piece is padded) and leave it one per ``ptime``. The
engine still keeps that queue short (``room``: a local model of Asterisk's playout clock) so ``played`` audio
stays close to what the caller heard, honours ``MEDIA_XOFF``/``MEDIA_XON``, and on barge-in ``flush`` drops its
own backlog and sends ``FLUSH_MEDIA``, which empties Asterisk's queue. ``drained`` sends ``MARK_MEDIA <n>`` after
the last frame and returns on ``MEDIA_MARK_PROCESSED <n>``: Asterisk sends that only once every frame before the
mark has left its queue (``QUEUE_DRAINED`` would also fire on any underrun mid-answer), so a hangup after the
farewell waits until the caller really heard it. A flush discards pending marks in Asterisk, so it releases
their waiters here. Bad input (unknown events, oversized text, binary before ``MEDIA_START``) is counted and
ignored; a dead socket ends ``frames()`` and every wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol
from urllib.parse import quote, urlsplit, urlunsplit

import aiohttp

from engine.core.queues import until_closed

log = logging.getLogger(__name__)

ULAW_SILENCE = 0xFF
#: Asterisk's text messages are short (MEDIA_START with a long channel name is ~200 bytes); more is not Asterisk.
MAX_TEXT = 4096
#: Caller frames held for a reader that is behind (the oldest go first): 10 s of 20 ms frames.
MAX_INCOMING = 500
SUBPROTOCOL = "media"


class MediaSocket(Protocol):
    """What ``WsMedia`` needs of a WebSocket: aiohttp's client and server sockets both are one."""

    @property
    def closed(self) -> bool: ...

    async def send_str(self, data: str) -> None: ...

    async def send_bytes(self, data: bytes) -> None: ...

    async def receive(self) -> aiohttp.WSMessage: ...

    async def close(self, *, code: int = ..., message: bytes = ...) -> bool: ...


class WsMediaError(Exception):
    """The media socket could not be opened or did not start (the message says which and why)."""


def media_url(ari_url: str, connection_id: str) -> str:
    """Where the app connects in (``connection_type=server``): Asterisk's HTTP server, ``/media/<id>`` next to
    ``/ari`` (``http://pbx:8088/ari`` → ``ws://pbx:8088/media/<id>``; https → wss; an http.conf prefix is kept)."""
    parts = urlsplit(ari_url.rstrip("/"))
    scheme = "wss" if parts.scheme == "https" else "ws"
    prefix = parts.path[: -len("/ari")] if parts.path.endswith("/ari") else parts.path
    return urlunsplit((scheme, parts.netloc, f"{prefix}/media/{quote(connection_id, safe='')}", "", ""))


def parse_message(text: str) -> dict[str, str] | None:
    """A chan_websocket event as a dict with ``event`` and its fields, in either control format; None if none.

    Plain text is ``NAME`` then ``key:value`` words (``MEDIA_START connection_id:… format:ulaw …``), except the
    mark/buffering events whose one word after the name is the correlation id."""
    text = text.strip()
    if text.startswith("{"):
        try:
            decoded = json.loads(text)
        except ValueError:
            return None
        if not isinstance(decoded, dict) or not isinstance(decoded.get("event"), str):
            return None
        return {str(k): v if isinstance(v, str) else json.dumps(v) for k, v in decoded.items()}
    name, _, rest = text.partition(" ")
    if not name or not name.replace("_", "").isalnum():
        return None
    fields: dict[str, str] = {"event": name}
    if name in ("MEDIA_MARK_PROCESSED", "MEDIA_BUFFERING_COMPLETED"):
        fields["correlation_id"] = rest.strip()
        return fields
    for word in rest.split():
        key, sep, value = word.partition(":")
        if sep:
            fields[key] = value
    return fields


@dataclass
class WsCounters:
    received_frames: int = 0
    received_bytes: int = 0
    sent_frames: int = 0
    flushes: int = 0
    xoff: int = 0
    ignored: int = 0
    errors: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


class WsMedia:
    """One chan_websocket connection: ``frames()`` in, ``queue``/``room``/``flush``/``drained`` out."""

    def __init__(
        self,
        ws: MediaSocket,
        *,
        owner: aiohttp.ClientSession | None = None,
        on_dtmf: Callable[[str], None] | None = None,
    ) -> None:
        self.ws = ws
        self.counters = WsCounters()
        self.connection_id = ""
        self.channel_id = ""
        self.format = ""
        self.frame_bytes = 160
        self.frame_s = 0.02
        self.json = False
        self.on_dtmf = on_dtmf
        self._owner = owner
        self._started = asyncio.Event()
        self._incoming: asyncio.Queue[bytes | None] = asyncio.Queue(maxsize=MAX_INCOMING)
        self._partial = bytearray()
        self._fifo: deque[bytes | str] = deque()  # whole frames and in-band commands (MARK_MEDIA), in order
        self._urgent: deque[str] = deque()  # FLUSH_MEDIA goes before anything queued
        self._wake = asyncio.Event()
        self._progress = asyncio.Event()
        self._xoff = False
        self._play_end = 0.0  # when Asterisk's queue runs dry, by the local model of its playout clock
        self._mark_sent = 0
        self._mark_done = 0
        self._unmarked = False
        self._closed = False
        self._tasks: list[asyncio.Task[None]] = []

    # ---------------------------------------------------------------------------------------------- opening

    @classmethod
    async def connect(
        cls, url: str, *, timeout_s: float = 5.0, on_dtmf: Callable[[str], None] | None = None
    ) -> WsMedia:
        """Connect in to Asterisk (``connection_type=server``) and wait for ``MEDIA_START``."""
        session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s), trust_env=False)
        try:
            ws = await session.ws_connect(
                url,
                protocols=(SUBPROTOCOL,),
                max_msg_size=1 << 20,
                heartbeat=20.0,
                timeout=aiohttp.ClientWSTimeout(ws_close=timeout_s),
            )
        except (aiohttp.ClientError, OSError, TimeoutError) as e:
            await session.close()
            raise WsMediaError(f"cannot open the media WebSocket {url}: {e or type(e).__name__}") from None
        media = cls(ws, owner=session, on_dtmf=on_dtmf)
        await media.start(timeout_s)
        return media

    async def start(self, timeout_s: float = 5.0) -> None:
        """Run the reader and writer; returns once ``MEDIA_START`` arrived (``WsMediaError`` if it does not)."""
        loop = asyncio.get_running_loop()
        self._tasks = [
            loop.create_task(self._read_loop(), name="ws-media:in"),
            loop.create_task(self._write_loop(), name="ws-media:out"),
        ]
        try:
            async with asyncio.timeout(timeout_s):
                await self._started.wait()
        except TimeoutError:
            await self.aclose()
            raise WsMediaError(f"Asterisk sent no MEDIA_START within {timeout_s:g} s") from None
        if self._closed:
            raise WsMediaError("the media WebSocket closed before MEDIA_START")
        if self.format not in ("ulaw", "mulaw"):
            fmt = self.format
            await self.aclose()
            raise WsMediaError(f"the media WebSocket carries {fmt!r}; the engine asked for ulaw")

    # ---------------------------------------------------------------------------------------------- receive

    async def _read_loop(self) -> None:
        try:
            while not self._closed:
                msg = await self.ws.receive()
                if msg.type == aiohttp.WSMsgType.BINARY:
                    self._on_audio(bytes(msg.data))
                elif msg.type == aiohttp.WSMsgType.TEXT:
                    self._on_text(str(msg.data))
                elif msg.type in (
                    aiohttp.WSMsgType.CLOSE,
                    aiohttp.WSMsgType.CLOSING,
                    aiohttp.WSMsgType.CLOSED,
                    aiohttp.WSMsgType.ERROR,
                ):
                    break
        except (aiohttp.ClientError, OSError, RuntimeError) as e:
            log.info("media WebSocket %s: %s", self.connection_id or "?", e)
        finally:
            self._close_local()

    def _on_audio(self, data: bytes) -> None:
        if not self._started.is_set() or not data:
            self.counters.ignored += 1
            return
        self.counters.received_frames += 1
        self.counters.received_bytes += len(data)
        try:
            self._incoming.put_nowait(data)
        except asyncio.QueueFull:  # nobody reads: drop the oldest, keep the newest speech
            self._incoming.get_nowait()
            self._incoming.put_nowait(data)

    def _on_text(self, text: str) -> None:
        event = parse_message(text) if len(text) <= MAX_TEXT else None
        kind = event["event"] if event else None
        if event is None or kind is None:
            self.counters.ignored += 1
            log.debug("media WebSocket: ignoring %r", text[:80])
        elif kind == "MEDIA_START":
            self._on_start(event, text.lstrip().startswith("{"))
        elif kind == "MEDIA_XOFF":
            self._xoff = True
            self.counters.xoff += 1
        elif kind == "MEDIA_XON":
            self._xoff = False
            self._wake.set()
        elif kind == "MEDIA_MARK_PROCESSED":
            mark = event.get("correlation_id", "")
            if mark.isdigit():
                self._mark_done = max(self._mark_done, min(int(mark), self._mark_sent))
                self._progress.set()
        elif kind == "DTMF_END":
            if self.on_dtmf is not None and event.get("digit"):
                self.on_dtmf(event["digit"][:1])
        elif kind == "ERROR":
            self.counters.errors.append(event.get("error_text", text)[:200])
            log.warning("media WebSocket %s: Asterisk says %s", self.connection_id, event.get("error_text", text))
        elif kind not in ("QUEUE_DRAINED", "MEDIA_BUFFERING_COMPLETED", "STATUS"):
            self.counters.ignored += 1

    def _on_start(self, event: dict[str, str], as_json: bool) -> None:
        self.json = as_json
        self.connection_id = event.get("connection_id", "")
        self.channel_id = event.get("channel_id", "")
        self.format = event.get("format", "")
        size, ptime = event.get("optimal_frame_size", ""), event.get("ptime", "")
        if size.isdigit() and int(size) > 0:
            self.frame_bytes = int(size)
        if ptime.isdigit() and int(ptime) > 0:
            self.frame_s = int(ptime) / 1000.0
        self._started.set()

    def frames(self) -> AsyncIterator[bytes]:
        """The caller's μ-law audio as Asterisk sends it, until the socket closes."""
        return until_closed(self._incoming)

    # ---------------------------------------------------------------------------------------------- send

    def queue(self, ulaw: bytes) -> None:
        """Play ``ulaw`` after what is queued (sent in whole ``optimal_frame_size`` frames)."""
        if not ulaw or self._closed:
            return
        self._partial += ulaw
        self._unmarked = True
        while len(self._partial) >= self.frame_bytes:
            self._fifo.append(bytes(self._partial[: self.frame_bytes]))
            del self._partial[: self.frame_bytes]
        self._wake.set()

    @property
    def ahead_s(self) -> float:
        """Audio not yet played by Asterisk: its queue (modelled) plus what is still here."""
        here = sum(len(x) for x in self._fifo if isinstance(x, bytes)) + len(self._partial)
        return max(0.0, self._play_end - time.monotonic()) + here * self.frame_s / self.frame_bytes

    async def room(self, max_ahead_s: float) -> None:
        """Wait until at most ``max_ahead_s`` of audio is ahead of what the caller hears."""
        while not self._closed and (excess := self.ahead_s - max_ahead_s) > 0:
            self._progress.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(excess, 0.005)):
                    await self._progress.wait()

    def flush(self) -> None:
        """Barge-in: drop the backlog here and tell Asterisk to empty its queue (``FLUSH_MEDIA``)."""
        self._partial.clear()
        self._fifo.clear()
        self._unmarked = False
        self._play_end = time.monotonic()
        self._mark_done = self._mark_sent  # Asterisk frees the pending marks with the audio
        self.counters.flushes += 1
        if not self._closed:
            self._urgent.append("FLUSH_MEDIA")
            self._wake.set()
        self._progress.set()

    async def drained(self) -> None:
        """Return once Asterisk has played everything queued so far (``MARK_MEDIA`` → ``MEDIA_MARK_PROCESSED``)."""
        if self._unmarked and not self._closed:
            self._unmarked = False
            if self._partial:  # outside bulk mode Asterisk drops a partial frame: pad it
                self._fifo.append(bytes(self._partial).ljust(self.frame_bytes, bytes([ULAW_SILENCE])))
                self._partial.clear()
            self._mark_sent += 1
            self._fifo.append(f"MARK_MEDIA {self._mark_sent}")
            self._wake.set()
        target = self._mark_sent
        while not self._closed and self._mark_done < target:
            self._progress.clear()
            await self._progress.wait()

    def command(self, name: str, **fields: str) -> str:
        """``name`` (with a correlation id, if any) in the control format Asterisk uses on this connection."""
        if self.json:
            return json.dumps({"command": name, **fields})
        return " ".join([name, *fields.values()])

    async def _write_loop(self) -> None:
        try:
            while not self._closed:
                await self._wake.wait()
                self._wake.clear()
                while not self._closed:
                    if self._urgent:
                        await self.ws.send_str(self.command(self._urgent.popleft()))
                    elif self._fifo and isinstance(head := self._fifo[0], str):
                        self._fifo.popleft()
                        name, _, mark = head.partition(" ")
                        await self.ws.send_str(self.command(name, correlation_id=mark))
                    elif self._fifo and not self._xoff:
                        frame = self._fifo.popleft()
                        assert isinstance(frame, bytes)
                        self._play_end = max(self._play_end, time.monotonic()) + self.frame_s
                        await self.ws.send_bytes(frame)
                        self.counters.sent_frames += 1
                        self._progress.set()
                        await asyncio.sleep(0)  # let MEDIA_XOFF in between frames of a burst
                    else:
                        break
        except (aiohttp.ClientError, OSError, RuntimeError, ConnectionError) as e:
            log.info("media WebSocket %s: cannot send: %s", self.connection_id or "?", e)
            self._close_local()

    # ---------------------------------------------------------------------------------------------- close

    def _close_local(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._wake.set()
        self._progress.set()
        self._started.set()
        if self._incoming.full():
            self._incoming.get_nowait()
        self._incoming.put_nowait(None)

    @property
    def closed(self) -> bool:
        return self._closed

    async def aclose(self) -> None:
        """Close the socket (Asterisk then hangs up the channel) and stop the reader and writer."""
        self._close_local()
        with contextlib.suppress(aiohttp.ClientError, OSError, RuntimeError, ConnectionError):
            await self.ws.close()
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        if self._owner is not None:
            await self._owner.close()
