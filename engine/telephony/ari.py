"""A thin typed client for Asterisk's REST Interface: REST over aiohttp, events over one WebSocket that reconnects.

Why it exists (and not ``ari-client`` from PyPI): that library does not reconnect its events socket, predates
``externalMedia`` and chan_websocket, and is synchronous at its core; the engine needs a dozen requests, each with
a timeout and an error that says which request failed and why, plus an event stream that survives Asterisk
restarts. Requests follow ``shared/reference/ari-api-docs`` (the emulator in the tests validates every one
against that spec). ``events()`` yields every event as a dict, a synthetic ``{"type": "AriConnected"}`` once the
socket is first up (the owner releases what an earlier run left before it takes calls) and, after the socket came
back, a synthetic ``{"type": "AriReconnected"}`` so the owner can recover the calls whose channels are still up.

Asterisk answers the requests that create a channel (``externalMedia``, snoop, originate) before the channel is in
the Stasis app; its ``StasisStart`` comes later, and ``addChannel`` before it is 422. ``entering`` is the one way
the engine waits for a channel it created: registered under the id the engine chose BEFORE the request goes out
(an early event is never missed), bounded by a timeout whose error names the channel and the request. An awaited
``StasisStart`` goes to its waiter only, never out of ``events()``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import aiohttp

from engine.bounds.json_text import JsonBoundsError, loads_bounded
from engine.core.backoff import Backoff, Retry

log = logging.getLogger(__name__)

#: Largest event frame accepted from Asterisk (a channel snapshot is ~1 KB).
MAX_EVENT_BYTES = 1024 * 1024
MAX_EVENT_DEPTH = 32
CONNECTED = "AriConnected"
RECONNECTED = "AriReconnected"


class AriError(Exception):
    """A request Asterisk refused or that never got an answer; ``status`` is None when there was no answer."""

    def __init__(self, what: str, message: str, status: int | None = None) -> None:
        super().__init__(f"ARI {what}: {message}")
        self.what = what
        self.status = status


class Entering:
    """The wait for the ``StasisStart`` of one channel the engine creates (``AriClient.entering``); as an async
    context manager it stops waiting on exit, so a ``StasisStart`` after that is nobody's (the engine hangs up)."""

    def __init__(self, entry: StasisEntry, channel_id: str, what: str) -> None:
        self.entry, self.channel_id, self.what = entry, channel_id, what
        self.future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()

    async def wait(self, timeout_s: float) -> dict[str, Any]:
        """The channel's ``StasisStart`` event; ``AriError`` naming channel and request after ``timeout_s``."""
        try:
            async with asyncio.timeout(timeout_s):
                return await asyncio.shield(self.future)
        except TimeoutError:
            self.cancel()
            raise AriError(
                self.what, f"channel {self.channel_id} did not enter Stasis within {timeout_s:g} s of the request"
            ) from None

    def cancel(self) -> None:
        """Stop waiting (the request failed, the wait timed out, the channel is no longer wanted)."""
        if self.entry.waiting.get(self.channel_id) is self:
            del self.entry.waiting[self.channel_id]
        if not self.future.done():
            self.future.cancel()
        elif not self.future.cancelled():
            self.future.exception()  # retrieved: a channel gone before anyone waited is no unhandled error

    async def __aenter__(self) -> Entering:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.cancel()


class StasisEntry:
    """The channels the engine waits to see enter Stasis, by the id it chose for each."""

    def __init__(self) -> None:
        self.waiting: dict[str, Entering] = {}

    def expect(self, channel_id: str, what: str) -> Entering:
        if channel_id in self.waiting:
            raise ValueError(
                f"already waiting for channel {channel_id} to enter Stasis ({self.waiting[channel_id].what})"
            )
        entering = self.waiting[channel_id] = Entering(self, channel_id, what)
        return entering

    def arrived(self, event: Mapping[str, Any]) -> bool:
        """Give a ``StasisStart`` to its waiter; False when nobody waits for that channel."""
        channel = event.get("channel")
        entering = self.waiting.pop(str(channel.get("id", "")), None) if isinstance(channel, dict) else None
        if entering is None:
            return False
        if not entering.future.done():
            entering.future.set_result(dict(event))
        return True

    def gone(self, event: Mapping[str, Any]) -> None:
        """A channel destroyed before it entered Stasis: its waiter fails at once (the event still goes out)."""
        channel = event.get("channel")
        entering = self.waiting.pop(str(channel.get("id", "")), None) if isinstance(channel, dict) else None
        if entering is not None and not entering.future.done():
            why = f"channel {entering.channel_id} was hung up before it entered Stasis (cause {event.get('cause')})"
            entering.future.set_exception(AriError(entering.what, why, 404))


def events_url(base_url: str, app: str) -> str:
    """``http://host:8088/ari`` → ``ws://host:8088/ari/events?app=…`` (https → wss)."""
    parts = urlsplit(base_url.rstrip("/"))
    scheme = "wss" if parts.scheme == "https" else "ws"
    return urlunsplit((scheme, parts.netloc, parts.path + "/events", f"app={app}&subscribeAll=false", ""))


class AriClient:
    def __init__(
        self,
        base_url: str,
        username: str,
        password: str,
        app: str,
        *,
        timeout_s: float = 5.0,
        backoff: Backoff = Backoff(0.2, 10.0),
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.app = app
        self.timeout_s = timeout_s
        self.backoff = backoff
        self._auth_header = {"Authorization": aiohttp.encode_basic_auth(username, password)}
        self._http: aiohttp.ClientSession | None = None
        self._closed = False
        #: True while the events socket is up (the console and /mcp/status show it).
        self.connected = False
        self.reconnects = 0
        self.last_error: str | None = None
        self.stasis = StasisEntry()

    async def __aenter__(self) -> AriClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _session(self) -> aiohttp.ClientSession:
        if self._http is None or self._http.closed:
            self._http = aiohttp.ClientSession(
                headers=self._auth_header, timeout=aiohttp.ClientTimeout(total=self.timeout_s), trust_env=False
            )
        return self._http

    async def close(self) -> None:
        self._closed = True
        if self._http is not None:
            await self._http.close()

    def entering(self, channel_id: str, what: str) -> Entering:
        """Start waiting for the ``StasisStart`` of ``channel_id``, which the request ``what`` is about to create:
        call before sending it."""
        return self.stasis.expect(channel_id, what)

    # ---------------------------------------------------------------------------------------------- REST

    async def request(
        self, method: str, path: str, params: Mapping[str, Any] | None = None, body: Mapping[str, Any] | None = None
    ) -> Any:
        """One request; the JSON answer (None for 204). ``AriError`` says which request failed and why."""
        what = f"{method} {path}"
        query = {k: _param(v) for k, v in (params or {}).items() if v is not None}
        try:
            async with self._session().request(method, self.base_url + path, params=query, json=body) as r:
                text = await r.text()
                if r.status >= 400:
                    raise AriError(what, _reason(r.status, text), r.status)
                if r.status == 204 or not text.strip():
                    return None
                try:
                    return loads_bounded(text, MAX_EVENT_DEPTH)
                except JsonBoundsError as e:
                    raise AriError(what, f"the answer is not usable JSON ({e})", r.status) from None
        except TimeoutError:
            raise AriError(what, f"no answer within {self.timeout_s:g} s") from None
        except aiohttp.ClientError as e:
            raise AriError(what, f"cannot reach Asterisk at {self.base_url}: {e}") from None

    async def info(self) -> dict[str, Any]:
        return dict(await self.request("GET", "/asterisk/info") or {})

    async def answer(self, channel_id: str) -> None:
        await self.request("POST", f"/channels/{channel_id}/answer")

    async def hangup(self, channel_id: str, reason: str = "normal") -> None:
        await self.request("DELETE", f"/channels/{channel_id}", {"reason": reason})

    async def channel(self, channel_id: str) -> dict[str, Any]:
        return dict(await self.request("GET", f"/channels/{channel_id}"))

    async def channels(self) -> list[dict[str, Any]]:
        return list(await self.request("GET", "/channels") or [])

    async def bridges(self) -> list[dict[str, Any]]:
        return list(await self.request("GET", "/bridges") or [])

    async def variable(self, channel_id: str, name: str) -> str | None:
        try:
            got = await self.request("GET", f"/channels/{channel_id}/variable", {"variable": name})
        except AriError as e:
            if e.status == 404:
                return None
            raise
        return str(got.get("value", "")) if isinstance(got, dict) else None

    async def create_bridge(self, bridge_id: str | None = None, kind: str = "mixing", name: str = "") -> dict[str, Any]:
        path = f"/bridges/{bridge_id}" if bridge_id else "/bridges"
        return dict(await self.request("POST", path, {"type": kind, "name": name or None}))

    async def destroy_bridge(self, bridge_id: str) -> None:
        await self.request("DELETE", f"/bridges/{bridge_id}")

    async def add_to_bridge(self, bridge_id: str, channel_ids: Sequence[str]) -> None:
        await self.request("POST", f"/bridges/{bridge_id}/addChannel", {"channel": list(channel_ids)})

    async def remove_from_bridge(self, bridge_id: str, channel_ids: Sequence[str]) -> None:
        await self.request("POST", f"/bridges/{bridge_id}/removeChannel", {"channel": list(channel_ids)})

    async def external_media(
        self,
        external_host: str,
        *,
        channel_id: str | None = None,
        fmt: str = "ulaw",
        encapsulation: str = "rtp",
        transport: str = "udp",
        connection_type: str | None = None,
    ) -> dict[str, Any]:
        params = {
            "app": self.app,
            "external_host": external_host or None,
            "format": fmt,
            "channelId": channel_id,
            "encapsulation": encapsulation,
            "transport": transport,
            "connection_type": connection_type,
        }
        return dict(await self.request("POST", "/channels/externalMedia", params))

    async def originate(
        self,
        endpoint: str,
        *,
        app_args: Sequence[str] = (),
        caller_id: str | None = None,
        timeout_s: int = 30,
        channel_id: str | None = None,
        variables: Mapping[str, str] | None = None,
        originator: str | None = None,
    ) -> dict[str, Any]:
        """``originator``: the channel this one is made for (Asterisk links their CDRs and ``linkedid``)."""
        params = {
            "endpoint": endpoint,
            "app": self.app,
            "appArgs": ",".join(app_args) or None,
            "callerId": caller_id,
            "timeout": timeout_s,
            "channelId": channel_id,
            "originator": originator,
        }
        body = {"variables": dict(variables)} if variables else None
        return dict(await self.request("POST", "/channels", params, body))

    async def snoop(
        self,
        channel_id: str,
        *,
        spy: str = "none",
        whisper: str = "none",
        app_args: Sequence[str] = (),
        snoop_id: str | None = None,
    ) -> dict[str, Any]:
        params = {"app": self.app, "spy": spy, "whisper": whisper, "appArgs": ",".join(app_args) or None}
        path = f"/channels/{channel_id}/snoop/{snoop_id}" if snoop_id else f"/channels/{channel_id}/snoop"
        return dict(await self.request("POST", path, params))

    async def moh(self, channel_id: str, on: bool) -> None:
        await self.request("POST" if on else "DELETE", f"/channels/{channel_id}/moh")

    async def ring(self, channel_id: str, on: bool) -> None:
        await self.request("POST" if on else "DELETE", f"/channels/{channel_id}/ring")

    # ---------------------------------------------------------------------------------------------- events

    async def events(self) -> AsyncIterator[dict[str, Any]]:
        """Every event for the app until ``close()``; reconnects with backoff when the socket drops."""
        url = events_url(self.base_url, self.app)
        retry = Retry(self.backoff)
        first = True
        while not self._closed:
            try:
                async with self._session().ws_connect(
                    url,
                    protocols=("ari",),
                    max_msg_size=MAX_EVENT_BYTES,
                    heartbeat=20.0,
                    timeout=aiohttp.ClientWSTimeout(ws_close=self.timeout_s),
                ) as ws:
                    self.connected, self.last_error = True, None
                    retry.succeeded()
                    if not first:
                        self.reconnects += 1
                    yield {"type": CONNECTED if first else RECONNECTED}
                    first = False
                    async for msg in ws:
                        if msg.type != aiohttp.WSMsgType.TEXT:
                            continue
                        try:
                            event = loads_bounded(msg.data, MAX_EVENT_DEPTH)
                        except JsonBoundsError as e:
                            log.warning("ARI: ignoring an event that is not usable JSON (%s)", e)
                            continue
                        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
                            log.warning("ARI: ignoring an event without a type")
                        elif event["type"] != "StasisStart" or not self.stasis.arrived(event):
                            if event["type"] == "ChannelDestroyed":
                                self.stasis.gone(event)
                            yield event
            except aiohttp.WSServerHandshakeError as e:
                self.last_error = _reason(e.status, e.message) if e.status else str(e)
            except (aiohttp.ClientError, OSError, TimeoutError) as e:
                self.last_error = f"cannot reach Asterisk at {self.base_url}: {e or type(e).__name__}"
            self.connected = False
            if self._closed:
                return
            delay = retry.failed(self.last_error or "socket closed")
            log.warning("ARI events: %s; reconnecting in %.1f s", retry.reason, delay)
            await retry.sleep(delay)


def _param(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    return str(value)


def _reason(status: int, text: str) -> str:
    hint = {401: "wrong ARI username or password (asterisk.username / asterisk.password)"}.get(status)
    message = text.strip()
    try:
        decoded = loads_bounded(message, 4)
        if isinstance(decoded, dict) and isinstance(decoded.get("message"), str):
            message = decoded["message"]
    except JsonBoundsError:
        pass
    return f"{status} {hint or message[:200] or 'error'}"
