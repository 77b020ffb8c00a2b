"""One call on the Deepgram Voice Agent: the socket, the protocol, the tool calls, live changes, reconnects.

Why it exists: the Voice Agent hears the caller, thinks with a configured LLM and speaks with a configured voice
over one socket; this adapter holds that socket for one call and speaks its protocol (reference/wire-formats.md
§7). ``Authorization: Token <key>``; the server greets with ``Welcome``, the adapter sends ``Settings`` (built
by ``deepgram_settings``) and waits for ``SettingsApplied``; audio then flows both ways as binary frames, with
a ``KeepAlive`` whenever no caller audio has been sent for a while.

Tool calls: only ``client_side`` functions of a ``FunctionCallRequest`` are executed — each one as its own task
through the ``ToolGateway`` (so the calls of one request run concurrently and a cancelled one can be stopped on
its own) — and each is answered with ``FunctionCallResponse{id, name, content}``, the id and name exactly as the
request had them. ``FunctionCallCancelled`` stops the task and no response is ever sent for that id. Live
changes: tool views (next-turn: once the agent has finished speaking; apply-now: at once) and replaced prompts go
out as ``UpdateThink`` (which replaces the whole think configuration), prompt additions as ``UpdatePrompt``
(which appends); slow-tool announcements as ``InjectAgentMessage``, never while the agent speaks. A dropped
socket is reopened with backoff and resumed with ``Settings`` carrying the history as ``agent.context``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from websockets.exceptions import ConnectionClosed

from engine.core.backoff import Backoff, Retry, reconnect
from engine.events import ToolsOmitted
from engine.providers.base import ProviderError
from engine.realtime import deepgram_settings as ds
from engine.realtime.audio import negotiate
from engine.realtime.deepgram_calls import FunctionCalls
from engine.realtime.deepgram_link import AgentLink
from engine.realtime.reporting import EngineReports
from engine.realtime.session import (
    AssistantAudio,
    AssistantText,
    CallerSpeechStarted,
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
from engine.sessions.steering import SteerKind, whisper_note
from engine.tools.view import ToolView

log = logging.getLogger(__name__)

#: Server messages that need no action here: acknowledgements and reports the engine has no use for, and a
#: server-side function's ``FunctionCallResponse`` (Deepgram ran it; nothing to answer).
_QUIET = frozenset(
    "Welcome SettingsApplied AgentThinking History LatencyReport FrustrationDetected ListenUpdated SpeakUpdated "
    "ThinkLiveUpdated CustomFromThinkProvider FunctionCallResponse PromptUpdated".split()
)


class DeepgramAgentSession(RealtimeSession):
    """One call's Voice Agent socket: handshake, reader, keep-alive, tool calls, live updates, reconnects."""

    def __init__(self, provider: AgentLink, session: CallSession) -> None:
        self.provider = provider
        self.session = session
        self.name = provider.name
        self.opts = provider.options
        self._sock: RealtimeSocket | None = None
        self._events: asyncio.Queue[RealtimeEvent | None] = asyncio.Queue()
        self._tasks: list[asyncio.Task[None]] = []
        self._closing = False
        self._ended = False
        self._instructions = ""
        self._view: ToolView | None = None
        self._sent_functions: list[dict[str, Any]] | None = None  # what the agent has (or is being sent)
        self._think_acks: deque[ToolView] = deque()  # views sent in UpdateThink, waiting for ThinkUpdated
        self._pending_update = False  # a next-turn tool change waiting for the agent to finish speaking
        self._agent_speaking = self._user_speaking = False
        self._inject: tuple[str, asyncio.Future[bool]] | None = None  # the announcement awaiting its fate
        #: An operator whisper in the prompt: "armed" until the caller's next turn, "turn" while it is answered.
        self._whisper = ""
        self._turns = itertools.count(1)
        self._turn_id: str | None = None
        self._last_audio = time.monotonic()
        self._audio_in_s = self._audio_out_s = 0.0
        self.calls: FunctionCalls | None = None
        self._reports = EngineReports(provider.name, log)
        self._omitted: tuple[str, ...] = ()

    # -------------------------------------------------------------------------------------------- setup

    async def start(self, setup: RealtimeSetup) -> None:
        spec = negotiate(setup.audio, self.provider.supported_formats())
        self.input_spec = self.output_spec = spec
        self._instructions, self._view = setup.instructions, setup.view
        self._reports.bind(setup.tools, self.session.call_id)
        self.calls = FunctionCalls(self.name, setup.tools, setup.session.history, self._send_json, self._exposed)
        await self._connect(greeting=setup.greeting, resume=False)
        self._tasks.append(asyncio.create_task(self._run(), name=f"deepgram:{self.session.call_id}:reader"))
        if self.opts.keepalive_s > 0:
            name = f"deepgram:{self.session.call_id}:keepalive"
            self._tasks.append(asyncio.create_task(self._keepalive(), name=name))

    def _exposed(self, provider_name: str) -> str:
        view = self._view
        return self.provider.rendered(view).names.exposed_name(provider_name) if view else provider_name

    def _shown(self, view: ToolView) -> frozenset[str]:
        """The tools the agent has of ``view``: past the function limit some are left out (not shown to the call,
        named once in a ``tools.omitted`` event)."""
        rendered = self.provider.rendered(view)
        if (left := rendered.omitted) and left != self._omitted:
            cid, limit = self.session.call_id, rendered.limit or 0
            self._reports.publish(ToolsOmitted(call_id=cid, provider=self.name, limit=limit, omitted=left))
        self._omitted = left
        return view.names - frozenset(rendered.omitted)

    def _think(self, view: ToolView) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        fns = self.provider.render_tools(view)
        return ds.think_settings(self.opts, self._instructions, fns), fns

    async def _connect(self, *, greeting: str | None, resume: bool) -> None:
        """Open the socket, wait for ``Welcome``, send ``Settings``, wait for ``SettingsApplied``."""
        assert self._view is not None
        view = self._view
        think, fns = self._think(view)
        context = ds.context_messages(self.session.history.items(), self.provider.rendered(view)) if resume else ()
        msg = ds.settings(self.opts, self.input_spec, think, greeting=greeting, context=context)
        self._sock = await self.provider.connect(msg, self._handle)
        self._sent_functions = fns
        self._think_acks.clear()
        self._pending_update = self._agent_speaking = False
        self.session.shown_tools = self._shown(view)
        self._last_audio = time.monotonic()

    # -------------------------------------------------------------------------------------------- audio

    async def send_audio(self, audio: bytes) -> None:
        if not audio:
            return
        if self._sock is not None and await self._send(self._sock.send_bytes(audio)):  # dropped while reconnecting
            self._audio_in_s += self.input_spec.duration_ms(len(audio)) / 1000
            self._last_audio = time.monotonic()

    async def _keepalive(self) -> None:
        every = self.opts.keepalive_s
        while not self._closing:
            await asyncio.sleep(every / 2)
            if self._sock is not None and time.monotonic() - self._last_audio >= every:
                if await self._send_json({"type": "KeepAlive"}):
                    self._last_audio = time.monotonic()

    async def _send(self, sending: Any) -> bool:
        try:
            await sending
        except (ConnectionClosed, OSError) as e:  # the reader sees the close and reconnects
            log.debug("%s: send failed, the socket is closing: %s", self.name, e)
            return False
        return True

    async def _send_json(self, msg: dict[str, Any]) -> bool:
        sock = self._sock
        return sock is not None and await self._send(sock.send_json(msg))

    # -------------------------------------------------------------------------------------------- events

    async def events(self) -> AsyncIterator[RealtimeEvent]:
        while True:
            ev = await self._events.get()
            if ev is None:
                return
            yield ev

    def _emit(self, ev: RealtimeEvent) -> None:
        if not self._ended:
            self._events.put_nowait(ev)

    def _usage(self) -> None:
        if self._audio_in_s or self._audio_out_s:
            self._emit(UsageReport(input_audio_s=self._audio_in_s, output_audio_s=self._audio_out_s))
            self._audio_in_s = self._audio_out_s = 0.0

    async def _run(self) -> None:
        """Read until the call ends; a dropped socket is reopened (with backoff) and the call resumed."""
        try:
            while not self._closing:
                sock = self._sock
                assert sock is not None
                async for m in sock.messages():
                    await self._handle(m)
                if self._closing:
                    break
                reason = sock.close_reason
                self._sock = None
                if self.calls is not None:
                    self.calls.abandon_all()
                self._emit(ProviderNotice(f"connection lost ({reason}); reconnecting", code="reconnecting"))
                if not await self._reconnect(reason):
                    break
        except Exception as e:  # a bug here must end this call with a reason, never the engine
            log.exception("%s: the session's reader failed", self.name)
            self._emit(ProviderNotice(f"session failed: {type(e).__name__}: {e}", fatal=True, code="failed"))
        finally:
            self._usage()
            self._ended = True
            self._events.put_nowait(None)

    async def _reconnect(self, reason: str) -> bool:
        retry = Retry(Backoff(self.opts.reconnect_first_s, self.opts.reconnect_max_s), self.opts.reconnect_attempts)

        async def attempt() -> bool:
            try:
                await self._connect(greeting=None, resume=True)
            except ProviderError as e:
                log.warning("%s: reconnect attempt %d failed: %s", self.name, retry.failures + 1, e)
                raise
            return True

        refused = lambda e: isinstance(e, ProviderError) and e.status in (401, 403)  # noqa: E731
        if await reconnect(attempt, retry, ProviderError, fatal=refused, stopped=lambda: self._closing):
            self._emit(ProviderNotice(f"reconnected after {retry.failures + 1} attempt(s)", code="reconnected"))
            return True
        if retry.stopped:
            return False
        why = f"; last error: {retry.reason}" if retry.reason else ""
        msg = f"connection lost ({reason}) and not restored after {retry.failures} attempt(s){why}"
        self._emit(ProviderNotice(msg, fatal=True, code="disconnected"))
        return False

    async def _handle(self, m: dict[str, Any] | bytes | BadFrame) -> None:
        if isinstance(m, bytes):
            self._audio_out_s += self.output_spec.duration_ms(len(m)) / 1000
            self._emit(AssistantAudio(m, self._turn_id))
        elif isinstance(m, BadFrame):
            log.warning("%s: ignored a malformed message from the agent: %s", self.name, m.reason)
        else:
            try:
                await self._dispatch(m)
            except (KeyError, TypeError, ValueError, AttributeError) as e:
                log.warning("%s: ignored a malformed %r message: %s", self.name, m.get("type"), e)

    async def _dispatch(self, m: dict[str, Any]) -> None:
        kind = m.get("type")
        if kind == "ConversationText":
            self._on_text(m)
        elif kind == "UserStartedSpeaking":
            self._agent_speaking, self._user_speaking = False, True
            self._emit(CallerSpeechStarted())
            if self._pending_update and self._view is not None:  # the answer was cut off: no AgentAudioDone
                await self._push_think(self._view)
        elif kind == "AgentStartedSpeaking":
            self._agent_speaking = True
            self._turn_id = f"turn-{next(self._turns)}"
        elif kind == "AgentAudioDone":
            await self._on_audio_done()
        elif kind == "FunctionCallRequest":
            if self.calls is not None:
                self.calls.request(m["functions"])
        elif kind == "FunctionCallCancelled":
            if self.calls is not None:
                self.calls.cancel(m["functions"])
        elif kind == "ThinkUpdated":
            if self._think_acks:
                self.session.shown_tools = self._shown(self._think_acks.popleft())
        elif kind == "InjectionRefused":
            log.info("%s: announcement refused by the agent: %s", self.name, m.get("message"))
            self._resolve_inject(False)
        elif kind in ("Warning", "Error"):
            level = kind.lower()
            self._emit(ProviderNotice(f"{level}: {ds.describe(m)}", code=str(m.get("code") or level)))
        elif kind in _QUIET:
            log.debug("%s: %s", self.name, kind)
        else:
            self._reports.unhandled(kind, "message")

    def _on_text(self, m: dict[str, Any]) -> None:
        text = m["content"]
        if not isinstance(text, str):
            raise TypeError("content is not a string")
        if m.get("role") == "user":  # the caller's turn is over (Deepgram has no "stopped speaking")
            if self._user_speaking:
                self._user_speaking = False
                self._emit(CallerSpeechStopped())
            self._emit(CallerText(text))
            self._whisper = "turn" if self._whisper else ""
        else:
            self._emit(AssistantText(text, item_id=self._turn_id))
            if self._inject is not None and text.strip() == self._inject[0].strip():
                self._resolve_inject(True)  # the agent is saying the injected announcement

    async def _on_audio_done(self) -> None:
        self._agent_speaking = False
        self._emit(ResponseDone("completed"))
        self._usage()
        steered, self._whisper = self._whisper == "turn", "" if self._whisper == "turn" else self._whisper
        if (self._pending_update or steered) and self._view is not None:  # a whisper's turn is over: the
            await self._push_think(self._view)  # whole prompt again, without it (UpdateThink replaces)

    # -------------------------------------------------------------------------------------------- live changes

    async def update_tools(self, view: ToolView, *, apply_now: bool = False) -> None:
        self._view = view
        if self._sock is None:  # reconnecting: the next Settings carries this view
            return
        if self.provider.render_tools(view) == self._sent_functions:
            self._pending_update = False  # the agent already has exactly these functions
            return
        if self._agent_speaking and not apply_now:
            self._pending_update = True  # next turn: once the agent has finished this answer
            return
        await self._push_think(view)

    async def _push_think(self, view: ToolView) -> None:
        self._pending_update = False
        think, fns = self._think(view)
        if await self._send_json({"type": "UpdateThink", "think": think}):
            self._sent_functions = fns
            self._think_acks.append(view)

    async def update_instructions(self, instructions: str) -> None:
        """The call's prompt changed: an addition goes out as ``UpdatePrompt`` (which appends to the agent's
        prompt); any other change as ``UpdateThink`` with the whole new prompt (which replaces it)."""
        old, self._instructions = self._instructions, instructions
        if instructions == old or self._sock is None:
            return
        if old and instructions.startswith(old) and instructions[len(old) :].strip():
            await self._send_json({"type": "UpdatePrompt", "prompt": instructions[len(old) :].strip()})
        elif self._view is not None:
            await self._push_think(self._view)

    async def announce(self, text: str) -> bool:
        """``InjectAgentMessage``, only while the agent is silent; True once the agent says it (its transcript of
        the message arrives), False when it is refused (``InjectionRefused``: a turn is in progress), the agent is
        speaking, or it is not said within ``announce_wait_s``."""
        if not text or self._sock is None or self._agent_speaking or self._inject is not None:
            return False
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._inject = (text, waiter)
        try:
            if not await self._send_json({"type": "InjectAgentMessage", "message": text}):
                return False
            async with asyncio.timeout(self.opts.announce_wait_s):
                return await waiter
        except TimeoutError:
            log.info("%s: the agent did not speak the announcement within %g s", self.name, self.opts.announce_wait_s)
            return False
        finally:
            self._inject = None

    async def steer(self, kind: SteerKind, text: str) -> str:
        """``say``: ``InjectAgentMessage`` with ``behavior: queue`` (said after the agent's current turn, never
        over it); ``whisper``: ``UpdatePrompt`` (appended to the prompt), taken out again once the caller's next
        turn has been answered."""
        if kind == "say":
            msg = {"type": "InjectAgentMessage", "message": text, "behavior": "queue"}
        else:
            msg = {"type": "UpdatePrompt", "prompt": whisper_note(text)}
        if not await self._send_json(msg):
            raise ProviderError(self.name, f"the conversation is not connected: {msg['type']} not sent")
        self._whisper = "armed" if kind == "whisper" else self._whisper
        return str(msg["type"])

    async def say_during_tool(self, text: str) -> str:
        """``InjectAgentMessage`` (``behavior: queue``): the agent says it while the function call waits (it is
        refused only while someone speaks; queued, it waits for the agent's turn to end)."""
        return await self.steer("say", text)

    def _resolve_inject(self, spoken: bool) -> None:
        if self._inject is not None and not self._inject[1].done():
            self._inject[1].set_result(spoken)

    # -------------------------------------------------------------------------------------------- closing

    async def aclose(self) -> None:
        if self._closing:
            return
        self._closing = True
        if self.calls is not None:
            await self.calls.aclose()
        sock, self._sock = self._sock, None
        if sock is not None:
            await sock.close()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        if not self._ended:
            self._usage()
            self._ended = True
            self._events.put_nowait(None)
