"""The socket side of an OpenAI Realtime session: connect and configure, read and dispatch, reconnect, close.

Why it exists: a realtime call must survive its socket (reconnect with backoff, set the session up again, go on
or end with a clear reason), must never be crashed by what the provider sends (malformed and unknown events are
logged with the provider's name and ignored), and must end its own tasks when it closes. That machinery is the
same whatever the call does with the events, so it is kept apart from the call's logic
(``openai_realtime_session``), which supplies the setup messages, the event handlers and what to reset and redo
around a reconnect.
"""

from __future__ import annotations

import asyncio
import binascii
import logging
from abc import abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from engine.core.backoff import Backoff, Retry, reconnect
from engine.providers.base import ProviderError
from engine.realtime.openai_realtime_wire import RealtimeOptions

if TYPE_CHECKING:
    from collections.abc import Sequence

    from engine.config.models import ProviderConfig
    from engine.providers.rendering import ToolRenderer
    from engine.realtime.session import AudioSpec
from engine.core.queues import until_closed
from engine.realtime.reporting import EngineReports
from engine.realtime.session import ProviderNotice, RealtimeEvent, RealtimeSession
from engine.realtime.socket import BadFrame, RealtimeSocket

log = logging.getLogger(__name__)

Message = dict[str, Any] | bytes | BadFrame
Handler = Callable[[Any, dict[str, Any]], Awaitable[None]]


class RealtimeEndpoint(Protocol):
    """What the socket link uses of its provider (``OpenAIRealtimeProvider`` is one)."""

    name: str
    options: RealtimeOptions
    timeout_s: float

    async def connect(self) -> RealtimeSocket: ...


class RealtimeAccount(RealtimeEndpoint, Protocol):
    """What a call's session uses of its provider beyond the link's (``OpenAIRealtimeProvider`` is one)."""

    config: ProviderConfig
    renderer: ToolRenderer

    @property
    def model(self) -> str: ...

    def supported_formats(self) -> Sequence[AudioSpec]: ...


#: Server events that need nothing from the adapter (known, so they are not logged as unknown).
QUIET = frozenset(
    {
        "session.created",
        "conversation.created",
        "conversation.item.added",
        "conversation.item.created",
        "conversation.item.done",
        "conversation.item.retrieved",
        "conversation.item.truncated",
        "conversation.item.deleted",
        "conversation.item.input_audio_transcription.segment",
        "response.output_item.added",
        "response.content_part.added",
        "response.content_part.done",
        "response.function_call_arguments.delta",
        "input_audio_buffer.committed",
        "input_audio_buffer.cleared",
        "input_audio_buffer.timeout_triggered",
        "output_audio_buffer.started",
        "output_audio_buffer.stopped",
        "output_audio_buffer.cleared",
    }
)


async def await_session_updated(
    sock: RealtimeSocket, provider: str, timeout_s: float, on_event: Callable[[Message], Awaitable[None]] | None = None
) -> None:
    """Read until ``session.updated``; an ``error`` event, silence or the socket closing is a ``ProviderError``
    (the provider's own reason, never the key). Other events go to ``on_event``."""
    try:
        async with asyncio.timeout(timeout_s):
            async for msg in sock.messages():
                kind = msg.get("type") if isinstance(msg, dict) else None
                if kind == "session.updated":
                    return
                if kind == "error" and isinstance(msg, dict):
                    err = msg.get("error")
                    err = err if isinstance(err, Mapping) else {}
                    code = f" ({err.get('code')})" if err.get("code") else ""
                    raise ProviderError(provider, f"session refused: {str(err.get('message', ''))[:300]}{code}")
                if on_event is not None:
                    await on_event(msg)
    except TimeoutError:
        raise ProviderError(provider, f"no session.updated within {timeout_s:g} s") from None
    raise ProviderError(provider, f"the socket closed before the session was set up: {sock.close_reason}")


class RealtimeLink(RealtimeSession):
    """Socket lifecycle for a Realtime session; subclasses supply setup messages, handlers and reconnect hooks."""

    #: event type -> handler (an unbound async method of the subclass).
    handlers: ClassVar[dict[str, Handler]] = {}

    def __init__(self, provider: RealtimeEndpoint) -> None:
        self.provider = provider
        self.name = provider.name
        self._sock: RealtimeSocket | None = None
        self._out: asyncio.Queue[RealtimeEvent | None] = asyncio.Queue()
        self._ready = asyncio.Event()  # connected and configured
        self._stopped = asyncio.Event()  # the session is over
        self._closing = False
        self._reader: asyncio.Task[None] | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self.reports = EngineReports(provider.name, log)

    # ------------------------------------------------------------------------------------------------ hooks

    @abstractmethod
    def setup_messages(self, *, replay: bool) -> list[dict[str, Any]]:
        """What a new socket gets first: the ``session.update`` (and, after a drop, the conversation so far)."""

    @abstractmethod
    def configured(self) -> None:
        """The provider confirmed the session on a new socket."""

    @abstractmethod
    def disconnected(self) -> None:
        """The socket dropped: forget what was in flight on it."""

    @abstractmethod
    async def reconnected(self) -> None:
        """A new socket is configured after a drop: go on with the call."""

    # ------------------------------------------------------------------------------------------------ lifecycle

    async def open_link(self, name: str) -> None:
        """Connect and configure (``ProviderError`` with the provider's reason), then start reading. A session
        that cannot start is over: its ``events()`` ends at once."""
        try:
            await self._connect()
        except BaseException:
            self._finish()
            raise
        self._reader = asyncio.create_task(self._read_loop(), name=name)

    async def aclose(self) -> None:
        if self._closing:
            return
        self._closing = True
        self._ready.clear()
        me = asyncio.current_task()
        tasks = [t for t in (self._reader, *self._tasks) if t is not None and t is not me and not t.done()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._sock is not None:
            await self._sock.close()
        self.disconnected()
        self._finish()

    def events(self) -> AsyncIterator[RealtimeEvent]:
        return until_closed(self._out)

    async def _connect(self, *, replay: bool = False) -> None:
        sock = await self.provider.connect()
        try:
            for msg in self.setup_messages(replay=replay):
                await sock.send_json(msg)
            await await_session_updated(sock, self.name, self.provider.timeout_s, self.dispatch)
        except BaseException:
            await sock.close()
            raise
        self._sock = sock
        self.configured()
        self._ready.set()

    async def _read_loop(self) -> None:
        try:
            while not self._closing and self._sock is not None:
                sock = self._sock
                async for msg in sock.messages():
                    await self.dispatch(msg)
                if self._closing or not await self._reconnect(sock.close_reason):
                    break
        except Exception as e:  # a bug here must end this call, never the engine
            log.exception("%s: the event reader failed", self.name)
            self.emit(ProviderNotice(f"{self.name}: the session failed: {type(e).__name__}", fatal=True))
        finally:
            if not self._closing and self._sock is not None:
                await self._sock.close()
            self._finish()

    async def _reconnect(self, reason: str) -> bool:
        self._ready.clear()
        self.disconnected()
        opts = self.provider.options
        self.emit(ProviderNotice(f"{self.name}: connection lost ({reason}); reconnecting", code="reconnecting"))
        retry = Retry(Backoff(opts.reconnect_first_ms / 1000.0, opts.reconnect_max_ms / 1000.0), opts.reconnect_tries)

        async def attempt() -> bool:
            try:
                await self._connect(replay=True)
            except ProviderError as e:
                log.warning("%s: reconnect %d/%d failed: %s", self.name, retry.failures + 1, opts.reconnect_tries, e)
                raise
            return True

        # a refused key or model does not come back by retrying
        refused = lambda e: isinstance(e, ProviderError) and e.status in (401, 403, 404)  # noqa: E731
        if await reconnect(attempt, retry, ProviderError, fatal=refused):
            self.emit(ProviderNotice(f"{self.name}: reconnected", code="reconnected"))
            await self.reconnected()
            return True
        last = retry.reason or reason
        tries = f"after {opts.reconnect_tries} tries" if opts.reconnect_tries else "(reconnecting is off)"
        self.emit(ProviderNotice(f"{self.name}: connection lost {tries}: {last}", fatal=True, code="connection_lost"))
        return False

    # ------------------------------------------------------------------------------------------------ helpers

    @property
    def ready(self) -> bool:
        return self._ready.is_set()

    @property
    def stopped(self) -> bool:
        return self._closing or self._stopped.is_set()

    async def wait_ready(self) -> None:
        """Until the socket is up (at once, normally; after a reconnect) or the session has ended."""
        if self._ready.is_set() or self._stopped.is_set():
            return
        waits = [asyncio.ensure_future(self._ready.wait()), asyncio.ensure_future(self._stopped.wait())]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    async def send(self, msg: Mapping[str, Any]) -> None:
        sock = self._sock
        if sock is None or self._closing:
            return
        try:
            await sock.send_json(msg)
        except Exception as e:  # the reader sees the drop and reconnects; the conversation is replayed then
            log.debug("%s: sending %s failed: %s", self.name, msg.get("type"), e)

    def emit(self, event: RealtimeEvent) -> None:
        if not self._stopped.is_set():
            self._out.put_nowait(event)

    def _finish(self) -> None:
        if not self._stopped.is_set():
            self._stopped.set()
            self._out.put_nowait(None)

    def spawn(self, coro: Coroutine[Any, Any, None], name: str) -> None:
        """A task of this call (tool batches); ``aclose`` cancels what is still running."""
        task = asyncio.create_task(coro, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._task_done)

    def _task_done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("%s: %s failed: %r", self.name, task.get_name(), task.exception())

    async def dispatch(self, msg: Message) -> None:
        """One server event to its handler; anything malformed is logged and ignored, an unknown type is counted
        and logged once (``reporting``)."""
        if isinstance(msg, BadFrame):
            log.warning("%s: ignored a malformed event: %s", self.name, msg.reason)
            return
        if isinstance(msg, bytes):
            log.warning("%s: ignored a binary frame of %d bytes", self.name, len(msg))
            return
        kind = msg.get("type")
        handler = self.handlers.get(kind) if isinstance(kind, str) else None
        if handler is None:
            if kind not in QUIET:
                self.reports.unhandled(kind)
            return
        try:
            await handler(self, msg)
        except (KeyError, TypeError, ValueError, AttributeError, binascii.Error) as e:
            log.warning("%s: ignored a malformed %s event: %s: %s", self.name, kind, type(e).__name__, e)
