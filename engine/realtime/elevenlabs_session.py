"""One ElevenLabs Agents call: the conversation socket, its client tool calls, tool pushes and reconnects.

Why it exists: split from the provider (elevenlabs_agent.py) so each module stays about one thing. ``start``
pushes the call's tools through the REST API (elevenlabs_tools.py), opens a signed-URL conversation
(elevenlabs_wire.py builds its messages) and takes the audio formats from its metadata. Every
``client_tool_call`` runs through the gateway as its own task and is answered on the conversation that asked,
never a later one. ElevenLabs cannot change a live conversation's tools: next-turn changes are pushed for the
next conversation, apply-now and a dropped socket reconnect carrying the conversation so far. The operator's
steering is a part the session holds (``elevenlabs_steer``).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.config.models import ProviderConfig
from engine.core.backoff import Backoff, Retry, reconnect
from engine.providers.base import ProviderError
from engine.providers.rendering.names import NameMap
from engine.realtime import elevenlabs_wire as wire
from engine.realtime.elevenlabs_steer import ElevenLabsSteering
from engine.realtime.elevenlabs_tools import ElevenLabsRest, client_tools
from engine.realtime.reporting import EngineReports
from engine.realtime.session import (
    PCM16_16K,
    AssistantAudio,
    AssistantInterrupted,
    AssistantText,
    CallerSpeechStopped,
    CallerText,
    ProviderNotice,
    RealtimeEvent,
    RealtimeSession,
    RealtimeSetup,
    ResponseDone,
    UsageReport,
)
from engine.realtime.socket import BadFrame, RealtimeSocket
from engine.sessions.session import CallSession
from engine.sessions.steering import SteerKind
from engine.tools.view import ToolView

# the provider module's logger, as before the split: log filters and readers keep their name
log = logging.getLogger("engine.realtime.elevenlabs_agent")


class AgentAccount(Protocol):
    """What a call's session uses of its provider (``ElevenLabsAgentProvider`` is one)."""

    name: str
    config: ProviderConfig
    agent_id: str
    push_lock: asyncio.Lock
    backoff: Backoff
    reconnects: int

    def rest(self) -> ElevenLabsRest: ...


@dataclass(slots=True)
class _Conn:
    """One conversation socket: a reconnect makes a new one (ElevenLabs event ids restart with it)."""

    sock: RealtimeSocket
    stream: AsyncIterator[dict[str, Any] | bytes | BadFrame]
    conversation_id: str = ""
    last_interrupt: int = -1
    outstanding: set[str] = field(default_factory=set)
    names: NameMap | None = None  # the tool names of the rendering this conversation started with


class ElevenLabsAgentSession(RealtimeSession):
    def __init__(self, provider: AgentAccount, session: CallSession) -> None:
        self.p = provider
        self.call = session
        self.input_spec = self.output_spec = PCM16_16K
        self._conn: _Conn | None = None
        self._setup: RealtimeSetup | None = None
        self._rest: ElevenLabsRest | None = None
        self._agent: dict[str, Any] = {}
        self._names: NameMap | None = None
        self._configs: list[dict[str, Any]] = []  # pushed to the agent
        self._live: list[dict[str, Any]] = []  # what the live conversation started with
        self._pushed: frozenset[str] = frozenset()  # exposed names of the tools the agent now has
        self._tasks: set[asyncio.Task[None]] = set()
        self._queue: asyncio.Queue[RealtimeEvent | None] = asyncio.Queue()
        self._reader: asyncio.Task[None] | None = None
        self._swap = asyncio.Lock()
        self._closed = False
        self._audio_in = self._audio_out = 0
        self._reports = EngineReports(provider.name, log)
        self.steering = ElevenLabsSteering(provider.name, self._socket)

    def _socket(self) -> RealtimeSocket | None:
        return self._conn.sock if self._conn is not None else None

    async def steer(self, kind: SteerKind, text: str) -> str:
        return await self.steering.steer(kind, text)

    async def say_during_tool(self, text: str) -> str:
        return await self.steering.say_during_tool(text)

    # ---------------------------------------------------------------------------------------------- setup

    async def start(self, setup: RealtimeSetup) -> None:
        self._setup = setup
        self._reports.bind(setup.tools, self.call.call_id)
        self._rest = self.p.rest()
        try:
            await self._push(setup.view)
            self._conn = await self._connect(greet=True)
            self._reader = asyncio.create_task(self._run(), name=f"elevenlabs:{self.call.call_id}:reader")
        except BaseException:
            await self._rest.aclose()
            raise

    async def _push(self, view: ToolView) -> bool:
        """Push ``view``'s client tools to the agent; True when anything changed there."""
        assert self._rest is not None
        rendered, configs = client_tools(view)
        async with self.p.push_lock:  # read inside the lock: another call may just have pushed its view
            self._agent = await self._rest.agent(self.p.agent_id)
            result = await self._rest.sync_tools(self.p.agent_id, self._agent, configs)
        if result.changed:
            log.info("%s: agent tools pushed (created %s, updated %s)", self.p.name, result.created, result.updated)
        self._names, self._configs, self._pushed = rendered.names, configs, view.names
        return result.changed

    def _initiation(self, greet: bool) -> dict[str, Any]:
        assert self._setup is not None
        msg, skipped = wire.initiation(
            self._agent,
            self.call,
            instructions=self._setup.instructions,
            greeting=self._setup.greeting,
            greet=greet,
            voice=self.p.config.voice,
        )
        if skipped and greet:
            note = f"{self.p.name}: the agent does not allow overriding {', '.join(skipped)}; its own is used"
            self._queue.put_nowait(ProviderNotice(note))
        return msg

    async def _connect(self, greet: bool) -> _Conn:
        """A new conversation: signed URL, socket, initiation data, metadata (formats); context when resuming."""
        assert self._rest is not None
        url = await self._rest.signed_url(self.p.agent_id)
        sock = await RealtimeSocket.open(self.p.name, url, timeout_s=self.p.config.timeout_ms / 1000)
        conn = _Conn(sock, sock.messages())
        try:
            await sock.send_json(self._initiation(greet))
            async with asyncio.timeout(self.p.config.timeout_ms / 1000):
                async for msg in conn.stream:
                    if isinstance(msg, dict) and msg.get("type") == "conversation_initiation_metadata":
                        self._take_metadata(conn, msg)
                        break
                    if isinstance(msg, dict) and msg.get("type") == "ping":
                        await self._pong(conn, msg)
                else:
                    raise ProviderError(self.p.name, f"the conversation did not start: {sock.close_reason}")
            update = None if greet else wire.context_update(self.call.history.items())
            if update is not None:
                await sock.send_json(update)
            conn.names, self._live, self.call.shown_tools = self._names, self._configs, self._pushed
        except Exception as e:  # a timeout or the socket closing under us is a failed start too
            await sock.close()
            if isinstance(e, ProviderError):
                raise
            why = "no metadata within the timeout" if isinstance(e, TimeoutError) else sock.close_reason
            raise ProviderError(self.p.name, f"the conversation did not start: {why}") from None
        except BaseException:
            await sock.close()
            raise
        return conn

    def _take_metadata(self, conn: _Conn, msg: dict[str, Any]) -> None:
        try:
            meta = wire.read_metadata(msg)
        except ValueError as e:
            raise ProviderError(self.p.name, str(e)) from None
        conn.conversation_id, self.input_spec, self.output_spec = (
            meta.conversation_id,
            meta.input_spec,
            meta.output_spec,
        )
        log.info("%s: conversation %s (%s in, %s out)", self.p.name, conn.conversation_id, *meta[1:])

    async def send_audio(self, audio: bytes) -> None:
        conn = self._conn
        if conn is None or conn.sock.closed or not audio:
            return  # between two conversations (reconnecting): the caller's audio cannot go anywhere
        self._audio_in += len(audio)
        try:
            await conn.sock.send_json({"user_audio_chunk": base64.b64encode(audio).decode("ascii")})
        except Exception as e:  # the socket went away under us; events() sees it and reconnects
            log.debug("%s: audio not sent: %s", self.p.name, e)

    async def events(self) -> AsyncIterator[RealtimeEvent]:
        while (ev := await self._queue.get()) is not None:
            yield ev

    async def _run(self) -> None:
        """Reads the conversation (and the next one, after a reconnect) into the event queue until it ends."""
        try:
            while not self._closed and (conn := self._conn) is not None:
                async for msg in conn.stream:
                    for ev in await self._handle(conn, msg):
                        self._queue.put_nowait(ev)
                if self._closed:
                    break
                async with self._swap:
                    if self._conn is conn:  # not replaced by apply-now: the socket dropped
                        for ev in await self._reconnect(conn):
                            self._queue.put_nowait(ev)
        except Exception as e:  # a bug here must end this call, never the engine
            log.exception("%s: the conversation reader failed", self.p.name)
            self._queue.put_nowait(ProviderNotice(f"{self.p.name}: {type(e).__name__}: {e}", fatal=True))
        finally:
            usage = self._usage()
            if usage is not None:
                self._queue.put_nowait(usage)
            self._queue.put_nowait(None)

    async def _handle(self, conn: _Conn, msg: dict[str, Any] | bytes | BadFrame) -> list[RealtimeEvent]:
        if not isinstance(msg, dict):
            reason = msg.reason if isinstance(msg, BadFrame) else "an unexpected binary frame"
            log.warning("%s: ignored a frame from ElevenLabs: %s", self.p.name, reason)
            return []
        kind = msg.get("type")
        body = msg.get(f"{kind}_event") if isinstance(kind, str) else None
        ev: dict[str, Any] = body if isinstance(body, dict) else {}
        try:
            if kind == "audio":
                return self._audio(conn, ev)
            if kind == "ping":
                await self._pong(conn, msg)
            elif kind == "interruption":
                conn.last_interrupt = int(ev.get("event_id", 0))
                return [AssistantInterrupted(None)]
            elif kind == "user_transcript":  # the caller's turn is over (ElevenLabs has no own stop event)
                text = str(msg.get("user_transcription_event", {}).get("user_transcript", "")).strip()
                return [CallerSpeechStopped(), CallerText(text)] if text else []
            elif kind == "agent_response_complete":
                return [ResponseDone()]
            elif kind == "agent_response":
                text = str(ev.get("agent_response", "")).strip()
                usage = self._usage()  # one report per answer: audio both ways since the last one
                out: list[RealtimeEvent] = [AssistantText(text)] if text else []
                return out + ([usage] if usage else [])
            elif kind == "client_tool_call":
                self._tool_call(conn, msg.get("client_tool_call"))
            elif kind == "client_error":
                return [ProviderNotice(f"{self.p.name}: ElevenLabs reports an error: {str(ev or msg)[:300]}")]
            elif kind in ("dtmf_request", "mcp_tool_call"):  # the agent acts on its own: the operator hears of it
                return [wire.agent_action_notice(self.p.name, kind, msg)]
            elif not (isinstance(kind, str) and (kind in wire.QUIET or kind.startswith("internal_"))):
                self._reports.unhandled(kind, "ElevenLabs message")
        except (TypeError, ValueError, AttributeError) as e:
            log.warning("%s: ignored a malformed ElevenLabs %r message: %s", self.p.name, kind, e)
        return []

    def _audio(self, conn: _Conn, ev: dict[str, Any]) -> list[RealtimeEvent]:
        event_id, data = wire.read_audio(ev)
        if event_id <= conn.last_interrupt:
            return []  # the caller interrupted this utterance: ElevenLabs says drop it
        self._audio_out += len(data)
        return [AssistantAudio(data, str(event_id))] if data else []

    async def _pong(self, conn: _Conn, msg: dict[str, Any]) -> None:
        if isinstance(event_id := (msg.get("ping_event") or {}).get("event_id"), int):  # else: malformed
            with contextlib.suppress(Exception):  # a socket closing under us: the reader sees it and reconnects
                await conn.sock.send_json({"type": "pong", "event_id": event_id})

    def _usage(self) -> UsageReport | None:
        if not (self._audio_in or self._audio_out):
            return None
        report = UsageReport(
            input_audio_s=self.input_spec.duration_ms(self._audio_in) / 1000,
            output_audio_s=self.output_spec.duration_ms(self._audio_out) / 1000,
        )
        self._audio_in = self._audio_out = 0
        return report

    # ---------------------------------------------------------------------------------------------- tools

    def _tool_call(self, conn: _Conn, call: Any) -> None:
        if not isinstance(call, dict) or not isinstance(call.get("tool_call_id"), str):
            raise ValueError("client_tool_call without a tool_call_id (cannot be answered)")
        tcid: str = call["tool_call_id"]
        if tcid in conn.outstanding:
            log.warning("%s: duplicate client_tool_call %s ignored (still running)", self.p.name, tcid)
            return
        conn.outstanding.add(tcid)
        task = asyncio.create_task(self._run_tool(conn, tcid, call), name=f"elevenlabs:{self.call.call_id}:{tcid}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_tool(self, conn: _Conn, tcid: str, call: dict[str, Any]) -> None:
        assert self._setup is not None and conn.names is not None
        try:
            msg = await wire.tool_result(self._setup.tools, conn.names, tcid, call, self.p.name)
        finally:
            conn.outstanding.discard(tcid)
        if conn is not self._conn or conn.sock.closed:
            log.info("%s: result of %s dropped: its conversation has ended", self.p.name, tcid)
            return
        try:
            await conn.sock.send_json(msg)
        except Exception as e:
            log.info("%s: result of %s not delivered: %s", self.p.name, tcid, e)

    async def update_tools(self, view: ToolView, *, apply_now: bool = False) -> None:
        if self._setup is None or self._closed:
            return
        configs = client_tools(view)[1]
        if configs != self._configs:  # the agent follows the view (the next conversation starts with it)
            await self._push(view)
        if configs == self._live:  # the live conversation already has exactly these tools
            self.call.shown_tools = view.names
            return
        if not apply_now:  # the live conversation keeps its tools: removals are refused by the engine now,
            # additions are heard from the next conversation (apply-now, a reconnect or the next call)
            self.call.shown_tools = self.call.shown_tools & view.names
            note = f"{self.p.name}: tool change pushed to the agent; takes effect on the next call"
            self._queue.put_nowait(ProviderNotice(note))
            return
        async with self._swap:
            old, self._conn = self._conn, await self._connect(greet=False)
            self._queue.put_nowait(ProviderNotice(f"{self.p.name}: reconnected to apply the tool change now"))
        if old is not None:
            await old.sock.close()

    async def _reconnect(self, lost: _Conn) -> list[RealtimeEvent]:
        reason = lost.sock.close_reason
        if lost.sock.close_code == 1000:  # a normal close: ElevenLabs ended the conversation (end_call, max duration)
            self._conn = None
            return [ProviderNotice(f"{self.p.name}: the agent ended the conversation ({reason})", fatal=True)]
        retry = Retry(self.p.backoff, tries=self.p.reconnects)
        refused = lambda e: isinstance(e, ProviderError) and e.status in (401, 403, 404)  # noqa: E731
        closed = lambda: self._closed  # noqa: E731
        conn = await reconnect(lambda: self._connect(greet=False), retry, ProviderError, fatal=refused, stopped=closed)
        if conn is not None:
            self._conn = conn
            return [ProviderNotice(f"{self.p.name}: connection lost ({reason}); reconnected", code="reconnected")]
        if retry.stopped:
            return []
        self._conn = None
        why = f"; reconnecting failed: {retry.reason}" if retry.reason else ""
        return [ProviderNotice(f"{self.p.name}: connection lost ({reason}){why}", fatal=True)]

    async def aclose(self) -> None:
        if self._closed:
            return
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._conn is not None:
            await self._conn.sock.close()
        if self._reader is not None:
            self._reader.cancel()  # it may be waiting to reconnect
            await asyncio.gather(self._reader, return_exceptions=True)
        else:
            self._queue.put_nowait(None)
        if self._rest is not None:
            await self._rest.aclose()
