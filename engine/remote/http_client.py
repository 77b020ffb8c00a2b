"""``RemoteEngines`` for one engine over its HTTP API: ``ava-console --attach http://host:port``.

Why it exists: a console can follow and drive a single remote ``ava-engine serve`` without Redis, through the routes
``engine.http.remote`` adds (the ``/events`` WebSocket, ``/engine``, ``POST /control/{command}``). This client
reconnects on its own and resumes after the last entry id it saw (nothing twice; a ``gap`` notice from the engine
is logged and kept in ``gaps``); it reports ``EngineLost`` once the engine has been silent for three of its
heartbeats (``clean`` when the engine said it was stopping) and ``EngineJoined`` when it answers again.

The bearer token (the engine's ``engine.http.auth_token``) comes from the ``token`` argument (the console's
``--token``) or the environment variable ``AVA_ENGINE_TOKEN`` — never from the URL: a URL ends up in shell history,
process lists and logs, so one carrying credentials is refused with a message saying where the token goes. The
token never appears in ``description`` or in any error.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import aiohttp

from engine.bounds.json_text import loads_bounded
from engine.core.backoff import Retry
from engine.events import Event
from engine.remote.base import (
    RECONNECT,
    EngineInfo,
    EngineJoined,
    EngineLost,
    Followed,
    RemoteError,
    RemoteEvent,
    check_approver,
    check_command,
    engine_info,
)
from engine.store.feed import entry_key

log = logging.getLogger(__name__)

TOKEN_ENV = "AVA_ENGINE_TOKEN"
#: An engine silent for this many of its heartbeats is lost.
LOST_AFTER_HEARTBEATS = 3
#: The heartbeat interval assumed until the engine has said its own.
DEFAULT_HEARTBEAT_S = 2.0
#: Close codes the engine sends (``engine.http.event_stream``): it stops; this client was too slow to keep.
GOING_AWAY = 1001
TRY_AGAIN_LATER = 1013
#: How long opening the stream or asking for the heartbeat may take.
CONNECT_TIMEOUT_S = 5.0


class EngineUnreachable(RemoteError):
    """Nothing answers at the engine's URL (as opposed to an engine that answers with a refusal)."""


class BadEngineUrl(RemoteError, ValueError):
    """The URL names no engine's HTTP API (a ``ValueError`` too, as ``open_remote`` promises for a bad URL)."""


def parse_url(url: str) -> str:
    """The engine's base URL (``http(s)://host:port[/prefix]``), or ``BadEngineUrl`` saying what is wrong."""
    try:
        parts = urlsplit(url.strip())
        parts.port  # noqa: B018 - raises ValueError for a bad port
    except ValueError as e:
        raise BadEngineUrl(f"{url!r} is not a valid engine URL ({e}); use http://host:port") from None
    if parts.scheme not in ("http", "https"):
        raise BadEngineUrl(f"an engine's HTTP API is http://host:port or https://host:port, not {parts.scheme!r}://")
    if parts.username is not None or parts.password is not None:
        raise BadEngineUrl(
            "the engine URL must not carry credentials (they would show in shell history and logs): give the "
            f"bearer token with --token or the environment variable {TOKEN_ENV}"
        )
    if parts.query or parts.fragment:
        raise BadEngineUrl(
            f"the engine URL takes no ?query or #fragment (a token goes in --token or {TOKEN_ENV}): "
            "use http://host:port"
        )
    if not parts.hostname:
        raise BadEngineUrl(f"{url!r} names no host: use http://host:port")
    return f"{parts.scheme}://{parts.netloc}{parts.path.rstrip('/')}"


class HttpEngines:
    """One remote engine, followed over its ``/events`` WebSocket and driven with ``POST /control/{command}``."""

    def __init__(self, url: str, token: str | None = None, approver: str | None = None) -> None:
        self.base = parse_url(url)
        #: The name under which this client answers tool approvals (``?approver=``; None: the engine does not
        #: wait for it).
        self.approver = check_approver(approver)
        self.description = self.base
        self._token = token or os.environ.get(TOKEN_ENV) or None
        self._session: aiohttp.ClientSession | None = None
        self._info: EngineInfo | None = None
        #: The newest entry id handed out by ``follow``: a reconnect resumes after it.
        self.last_entry: str | None = None
        #: The engine's gap notices (history it no longer had when this client resumed).
        self.gaps: list[dict[str, Any]] = []
        #: Whether the event stream is open now, and how often it was opened again after a loss.
        self.streaming = False
        self.reconnects = 0
        self._closed = False

    # ------------------------------------------------------------------------------------------- plumbing

    def _scrub(self, text: object) -> str:
        out = str(text)
        return out.replace(self._token, "***") if self._token else out

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._token}"} if self._token else {}

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(sock_connect=CONNECT_TIMEOUT_S))
        return self._session

    def _refusal(self, status: int, body: Any) -> RemoteError:
        msg = body.get("error", body) if isinstance(body, dict) else body
        if status == 401:
            given = "the token given" if self._token else f"no token (use --token or {TOKEN_ENV})"
            return RemoteError(f"{self.description} refused {given}: {self._scrub(msg)}")
        return RemoteError(f"{self.description} answered {status}: {self._scrub(msg)}")

    async def _get_engine(self) -> EngineInfo:
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                async with self._client().get(self.base + "/engine", headers=self._headers()) as r:
                    body = await r.json(content_type=None)
        except (aiohttp.ClientError, OSError, TimeoutError, ValueError) as e:
            why = self._scrub(e) or type(e).__name__
            raise EngineUnreachable(f"cannot reach the engine at {self.description}: {why}") from None
        if r.status != 200 or not isinstance(body, dict):
            raise self._refusal(r.status, body)
        self._info = engine_info(str(body.get("id", "")), body)
        return self._info

    # ------------------------------------------------------------------------------------------- RemoteEngines

    async def connect(self) -> None:
        self._closed = False
        await self._get_engine()

    async def close(self) -> None:
        """Stop following (a running ``follow()`` ends) and release the connection."""
        self._closed = True
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def engines(self) -> dict[str, EngineInfo]:
        """The engine, when it answers now (an unreachable engine is not live: ``{}``); a refused token raises."""
        try:
            info = await self._get_engine()
        except EngineUnreachable:
            return {}
        return {info.id: info}

    async def send(
        self, engine_id: str, command: str, args: Mapping[str, Any], timeout_s: float = 5.0
    ) -> dict[str, Any]:
        check_command(engine_id, command)
        info = self._info or await self._get_engine()
        if engine_id != info.id:
            raise RemoteError(f"no engine {engine_id!r} at {self.description} (it serves {info.id!r})")
        url = f"{self.base}/control/{command}"
        try:
            async with asyncio.timeout(timeout_s):
                async with self._client().post(url, json=dict(args), headers=self._headers()) as r:
                    body = await r.json(content_type=None)
        except TimeoutError:
            raise RemoteError(
                f"{engine_id}: {command}: no answer within {timeout_s:g} s from {self.description} "
                "(it may still have run there)"
            ) from None
        except (aiohttp.ClientError, OSError, ValueError) as e:
            raise RemoteError(f"{engine_id}: {command}: cannot reach {self.description}: {self._scrub(e)}") from None
        if r.status != 200 or not isinstance(body, dict):
            msg = body.get("error", body) if isinstance(body, dict) else body
            if r.status in (401, 403):
                raise self._refusal(r.status, body)
            raise RemoteError(f"{engine_id}: {command} failed: {self._scrub(msg)}")
        return body

    async def follow(self) -> AsyncGenerator[Followed, None]:
        joined: str | None = None
        lost = False  # EngineLost said for ``joined`` and not yet undone by an EngineJoined
        last_heard = time.monotonic()
        retry = Retry(RECONNECT)
        opened = False
        reason = "no answer"
        self._closed = False
        while not self._closed:
            ws: aiohttp.ClientWebSocketResponse | None = None
            try:
                ws = await self._open_stream()
            except (aiohttp.ClientError, OSError, TimeoutError) as e:
                reason = f"cannot reach it: {self._scrub(e) or type(e).__name__}"
            if ws is not None:
                self.reconnects += 1 if opened else 0
                opened = True
                retry.succeeded()
                self.streaming = True
                try:
                    async for item in self._read(ws):
                        if isinstance(item, EngineInfo):
                            last_heard = time.monotonic()
                            if item.id != joined or lost:
                                if joined is not None and item.id != joined and not lost:
                                    yield EngineLost(joined, False, f"{self.description} now serves {item.id!r}")
                                joined, lost = item.id, False
                                yield EngineJoined(item)
                        elif isinstance(item, RemoteEvent):
                            last_heard = time.monotonic()
                            yield item
                        else:  # the stream ended: (clean, why)
                            clean, reason = item
                            if clean and joined is not None and not lost:
                                lost = True
                                yield EngineLost(joined, True, reason)
                finally:
                    self.streaming = False
                    await ws.close()
                if self._closed:
                    return
            silent = time.monotonic() - last_heard
            bound = self._heartbeat_s() * LOST_AFTER_HEARTBEATS
            if joined is not None and not lost and silent > bound:
                lost = True
                yield EngineLost(joined, False, f"no heartbeat for {silent:.1f} s ({reason})")
            wait = retry.failed(reason)
            if joined is not None and not lost:  # wake up in time to say it is lost
                wait = min(wait, max(0.05, bound - silent + 0.01))
            await retry.sleep(wait)

    # ------------------------------------------------------------------------------------------- the stream

    def _heartbeat_s(self) -> float:
        return (self._info.heartbeat_s if self._info is not None else 0.0) or DEFAULT_HEARTBEAT_S

    async def _open_stream(self) -> aiohttp.ClientWebSocketResponse:
        url = self.base + "/events"
        params = {"after": self.last_entry} if self.last_entry else {}
        if self.approver:
            params["approver"] = self.approver
        try:
            async with asyncio.timeout(CONNECT_TIMEOUT_S):
                return await self._client().ws_connect(url, params=params, headers=self._headers(), autoping=True)
        except aiohttp.WSServerHandshakeError as e:
            if e.status in (400, 401, 403, 404, 421):  # refused, not away: retrying would not help
                raise self._refusal(e.status, e.message) from None
            raise

    async def _read(
        self, ws: aiohttp.ClientWebSocketResponse
    ) -> AsyncIterator[EngineInfo | RemoteEvent | tuple[bool, str]]:
        """Heartbeats (as ``EngineInfo``) and events from one open stream; last, ``(clean, why)`` when it ends."""
        last_key = entry_key(self.last_entry) if self.last_entry else None
        while True:
            try:
                async with asyncio.timeout(self._heartbeat_s() * LOST_AFTER_HEARTBEATS):
                    msg = await ws.receive()
            except TimeoutError:
                yield False, f"silent for {LOST_AFTER_HEARTBEATS} heartbeats"
                return
            if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.CLOSED):
                code, why = ws.close_code, str(msg.extra or "") if msg.type == aiohttp.WSMsgType.CLOSE else ""
                if code == TRY_AGAIN_LATER:
                    log.warning("%s dropped this console's event stream (%s); resuming", self.description, why)
                yield code == GOING_AWAY, why or f"the stream closed (code {code})"
                return
            if msg.type == aiohttp.WSMsgType.ERROR:
                yield False, f"the stream failed: {self._scrub(ws.exception())}"
                return
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            try:
                item = self._message(msg.data, last_key)
            except (ValueError, TypeError, AttributeError, KeyError) as e:  # not what an engine sends: skip it
                log.warning("%s sent a message this console cannot read (%s); skipped", self.description, e)
                continue
            if isinstance(item, EngineInfo):
                yield item
            elif item is not None and self._info is not None:
                entry_id, event = item
                last_key, self.last_entry = entry_key(entry_id), entry_id
                if event is not None:  # a type this console does not know is skipped
                    yield RemoteEvent(self._info.id, entry_id, event)

    def _message(self, text: str, last_key: tuple[int, int] | None) -> EngineInfo | tuple[str, Event | None] | None:
        """One stream message: a heartbeat, a new event as (entry id, the event or None for a type this console
        does not know), or None (a gap notice, kept in ``gaps``; an event seen before a reconnect)."""
        from engine.recorder.codec import event_from_dict

        data = loads_bounded(text, 64)  # outside text: bounded, made valid
        if "heartbeat" in data:
            beat = data["heartbeat"]
            self._info = engine_info(str(beat["id"]), beat)
            return self._info
        if "gap" in data:
            self.gaps.append(dict(data["gap"]))
            log.warning("%s: %s", self.description, data["gap"].get("reason", "events were missed"))
            return None
        if self._info is None:
            raise ValueError("an event before the engine's heartbeat")
        entry_id = str(data["entry_id"])
        key = entry_key(entry_id)  # ValueError when it is not one
        if last_key is not None and key <= last_key:
            return None  # seen before a reconnect
        return entry_id, event_from_dict(dict(data["event"]))
