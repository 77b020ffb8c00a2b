"""One call's OpenAI Realtime (GA) session: audio in, events out, tool calls through the engine's gateway.

Why it exists: the Realtime API hears the caller, detects turns (server VAD) and answers with audio on one
socket, but leaves the tool round trip and its lifecycle to the client (reference/wire-formats.md §3). This
session keeps those rules (the socket machinery is ``openai_realtime_link``, the state behind the rules
``openai_realtime_state``):

- a function call runs only after ``response.done`` says its response ``completed`` (``...arguments.done`` and
  ``response.output_item.done`` also come for cancelled responses — those calls never run);
- the calls of one response run concurrently through the ``ToolGateway``; each gets one
  ``conversation.item.create`` with a ``function_call_output`` (``call_id`` echoed exactly), then ONE
  ``response.create`` — never while another response is in flight (queued until its ``response.done``);
- a barge-in report (``played``) truncates the assistant item to the audio actually played;
- apply-now cancels the response in flight, sends the new tools and asks for the answer again; next-turn tool
  changes are one ``session.update``; ``session.shown_tools`` changes when ``session.updated`` confirms them;
- announcements are responses with instructions, sent only when no response is in flight (else queued);
- the operator's say-now line is such a response too (queued, never dropped); a whisper is a ``system`` message
  item for the next answer, deleted once an answer made after it is done (it steers one turn, as on text calls);
- after a dropped socket the link reconnects; the session re-sends itself and the conversation so far, and
  asks again, once, for a response that was cut off — with its instructions when it had some (a greeting, an
  announcement, a say-now line), so the caller hears that line and not an answer of the model's choosing;
- ``rate_limits.updated`` is a ``provider.rate_limits`` event and a gauge, an ``error`` (with its code and param)
  and a failed transcription of the caller are notices, and an event type it does not handle is counted and
  logged once (``reporting``).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import logging
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.events import ToolsOmitted
from engine.providers.base import ProviderError, ToolCallRequest
from engine.providers.rendering.names import NameMap
from engine.realtime import openai_realtime_wire as wire
from engine.realtime.audio import negotiate
from engine.realtime.openai_realtime_link import RealtimeAccount, RealtimeLink
from engine.realtime.openai_realtime_state import AudioLedger, PendingCall, RequestKind, ResponseLedger
from engine.realtime.session import (
    AssistantAudio,
    AssistantInterrupted,
    AssistantText,
    CallerSpeechStarted,
    CallerSpeechStopped,
    CallerText,
    ProviderNotice,
    RealtimeSetup,
    ResponseDone,
)
from engine.sessions.session import CallSession
from engine.sessions.steering import SteerKind, whisper_note
from engine.tools.view import ToolView

log = logging.getLogger(__name__)


@dataclass(slots=True)
class _Update:
    event_id: str
    names: frozenset[str]
    done: asyncio.Future[bool]


class OpenAIRealtimeSession(RealtimeLink):
    """One call's Realtime socket; see the module docstring for the lifecycle it keeps."""

    provider: RealtimeAccount

    def __init__(self, provider: RealtimeAccount, session: CallSession) -> None:
        super().__init__(provider)
        self.session = session
        self.input_spec = self.output_spec = wire.FORMATS[0]
        self.responses = ResponseLedger()
        self.audio = AudioLedger(self.output_spec, self.input_spec)
        self._setup: RealtimeSetup | None = None
        self._ids = itertools.count(1)
        self._view: ToolView | None = None
        self._tools: list[dict[str, Any]] = []
        self._names: NameMap | None = None
        self._shown: frozenset[str] = frozenset()
        self._omitted: tuple[str, ...] = ()
        self._updates: deque[_Update] = deque()
        self._replayed_outputs: set[str] = set()
        self._was_answering = False
        self._cut_body: dict[str, Any] | None = None
        #: Operator whispers in the conversation: (item id, the first response number they are for).
        self._notes: list[tuple[str, int]] = []
        self._created = 0
        self._created_no: dict[str, int] = {}

    # ------------------------------------------------------------------------------------------------ lifecycle

    async def start(self, setup: RealtimeSetup) -> None:
        self._setup = setup
        self.reports.bind(setup.tools, self.session.call_id)
        self.input_spec = self.output_spec = negotiate(setup.audio, self.provider.supported_formats())
        self.audio = AudioLedger(self.output_spec, self.input_spec)
        self._set_view(setup.view)
        await self.open_link(f"openai-realtime-{self.session.call_id}")
        if setup.greeting:
            await self._create_response("greeting", self._say(setup.greeting))

    async def send_audio(self, audio: bytes) -> None:
        if not audio or not self.ready:
            return  # while reconnecting the caller's audio is lost (the provider could not hear it anyway)
        self.audio.in_bytes += len(audio)
        await self.send({"type": "input_audio_buffer.append", "audio": base64.b64encode(audio).decode("ascii")})

    # ------------------------------------------------------------------------------------------------ tools

    def _set_view(self, view: ToolView) -> None:
        """Render ``view``; past the API's 128 tools the renderer leaves some out, and those are not shown to
        the call (its allowlist) and are named in a ``tools.omitted`` event."""
        rendered = self.provider.renderer.render(view)
        self._view, self._tools, self._names = view, rendered.tools, rendered.names
        self._shown = view.names - frozenset(rendered.omitted)
        if rendered.omitted and rendered.omitted != self._omitted and self._setup is not None:
            limit = rendered.limit or 0
            self.reports.publish(
                ToolsOmitted(call_id=self.session.call_id, provider=self.name, limit=limit, omitted=rendered.omitted)
            )
        self._omitted = rendered.omitted

    async def update_tools(self, view: ToolView, *, apply_now: bool = False) -> None:
        self._set_view(view)
        if not self.ready:
            return  # the reconnect's full session.update carries them (shown_tools follows its session.updated)
        redo = apply_now and self.responses.busy
        if redo:
            self.emit(AssistantInterrupted(self.audio.last_item))
            cancel: dict[str, Any] = {"type": "response.cancel"}
            if self.responses.active:
                cancel["response_id"] = self.responses.active
            await self.send(cancel)
        update = _Update(f"evt_tools_{next(self._ids)}", self._shown, asyncio.get_running_loop().create_future())
        self._updates.append(update)
        await self.send({**wire.tools_update(self._tools), "event_id": update.event_id})
        if redo:
            await self._create_response("redo", None)
        try:
            async with asyncio.timeout(self.provider.timeout_s):
                await asyncio.shield(update.done)
        except TimeoutError:
            self.emit(ProviderNotice(f"{self.name}: the tool change was not confirmed", code="tools_unconfirmed"))

    def _fail_updates(self) -> None:
        while self._updates:
            update = self._updates.popleft()
            if not update.done.done():
                update.done.set_result(False)

    async def _run_calls(self, calls: list[PendingCall]) -> None:
        assert self._setup is not None and self._names is not None
        names = self._names
        requests = [ToolCallRequest(names.exposed_name(c.name), c.arguments, provider_id=c.call_id) for c in calls]
        try:
            outputs = [wire.result_output(r) for r in await self._setup.tools.call_tools(requests)]
        except Exception as e:  # the engine could not run them at all: answer so the conversation goes on
            log.exception("%s: running %d tool calls failed", self.name, len(calls))
            outputs = [wire.error_output(f"the tool could not be run: {type(e).__name__}")] * len(calls)
        await self.wait_ready()
        for c, output in zip(calls, outputs, strict=True):
            if c.call_id in self._replayed_outputs:
                continue  # a reconnect already sent this result with the conversation
            item = {"type": "function_call_output", "call_id": c.call_id, "output": output}
            await self.send({"type": "conversation.item.create", "item": item})
        self.responses.drop_announcements()  # "one moment" is stale once the answer comes
        await self._create_response("tools", None)

    # ------------------------------------------------------------------------------------------------ responses

    @staticmethod
    def _say(text: str) -> dict[str, Any]:
        return {"instructions": wire.say_instructions(text), "tool_choice": "none"}

    async def _create_response(self, kind: RequestKind, body: dict[str, Any] | None) -> None:
        """Ask for a response now, or queue it until the one in flight is done (never talk over the model)."""
        if self.responses.busy or not self.ready:
            self.responses.queue(kind, body)
            return
        event_id = f"evt_resp_{next(self._ids)}"
        self.responses.begin(event_id, kind, body)
        msg: dict[str, Any] = {"type": "response.create", "event_id": event_id}
        if body:
            msg["response"] = body
        await self.send(msg)

    async def _drain(self) -> None:
        if self.ready and (request := self.responses.next_request()) is not None:
            await self._create_response(*request)

    async def announce(self, text: str) -> bool:
        if self.stopped or self._setup is None:
            return False
        await self._create_response("announce", self._say(text))
        return True

    async def steer(self, kind: SteerKind, text: str) -> str:
        if self.stopped or self._setup is None:
            raise ProviderError(self.name, "the conversation is not connected")
        if kind == "say":
            await self._create_response("say", self._say(text))
            return "response.create"
        await self.wait_ready()
        item_id = f"item_operator_note_{next(self._ids)}"  # ids are the conversation's: unique within it
        first = self._created + 1 + (1 if self.responses.requested is not None else 0)
        self._notes.append((item_id, first))
        await self.send({"type": "conversation.item.create", "item": wire.operator_note(item_id, whisper_note(text))})
        return "conversation.item.create"

    async def say_during_tool(self, text: str) -> str:
        """A response that only says ``text`` (``tool_choice: none``): the Realtime API takes one while a call's
        output is outstanding, and the call's output and its answer follow as usual. The response that made the
        call is done by then (calls run after its ``response.done``), so nothing that never ends is ahead of it."""
        return await self.steer("say", text)

    async def _drop_notes(self, response_id: str) -> None:
        """An answer is done: the whispers it was made after have steered their turn, and leave the conversation."""
        number = self._created_no.pop(response_id, 0)
        done = [n for n in self._notes if number >= n[1]]
        self._notes = [n for n in self._notes if number < n[1]]
        for item_id, _ in done:
            await self.send({"type": "conversation.item.delete", "item_id": item_id})

    async def played(self, item_id: str | None, played_ms: float) -> None:
        if not self.ready or (cut := self.audio.truncation(item_id, played_ms)) is None:
            return
        item, end = cut
        await self.send(
            {"type": "conversation.item.truncate", "item_id": item, "content_index": 0, "audio_end_ms": end}
        )

    # ------------------------------------------------------------------------------------------------ link hooks

    def setup_messages(self, *, replay: bool) -> list[dict[str, Any]]:
        assert self._setup is not None and self._names is not None
        config = wire.session_config(
            model=self.provider.model,
            instructions=self._setup.instructions,
            tools=self._tools,
            input_spec=self.input_spec,
            output_spec=self.output_spec,
            voice=self.provider.config.voice,
            options=self.provider.options,
            max_output_tokens=self.provider.config.max_tokens,
        )
        out: list[dict[str, Any]] = [{"type": "session.update", "session": config}]
        if replay:
            for item in wire.replay_items(
                self.session.history.items(), self._names, self.provider.options.replay_items
            ):
                out.append({"type": "conversation.item.create", "item": item})
                if item["type"] == "function_call_output":
                    self._replayed_outputs.add(item["call_id"])
        return out

    def configured(self) -> None:
        self.session.shown_tools = self._shown

    def disconnected(self) -> None:
        busy, body = self.responses.reset()
        if busy and not self._was_answering:
            self._was_answering, self._cut_body = True, body
        self.audio.reset()
        self._fail_updates()
        self._notes.clear()  # a new socket's conversation is replayed from the history, without the whispers

    async def reconnected(self) -> None:
        if self._was_answering:  # the response that was cut off is asked for again, with its instructions
            self.responses.queue("redo", self._cut_body)
        self._was_answering, self._cut_body = False, None
        await self._drain()

    # ------------------------------------------------------------------------------------------------ events in

    async def _on_created(self, msg: dict[str, Any]) -> None:
        self.responses.created(str(msg["response"]["id"]))
        self._created += 1
        self._created_no[str(msg["response"]["id"])] = self._created

    async def _on_audio(self, msg: dict[str, Any]) -> None:
        data = base64.b64decode(msg["delta"], validate=True)
        item = msg.get("item_id") if isinstance(msg.get("item_id"), str) else None
        self.audio.received(item, len(data))
        self.emit(AssistantAudio(data, item))

    async def _on_audio_done(self, msg: dict[str, Any]) -> None:
        if isinstance(msg.get("item_id"), str):
            self.audio.finished.add(msg["item_id"])

    async def _on_text(self, msg: dict[str, Any]) -> None:
        final = msg["type"].endswith(".done")
        text = (msg.get("transcript") if "transcript" in msg else msg.get("text")) if final else msg["delta"]
        self.emit(AssistantText(str(text or ""), final=final, item_id=msg.get("item_id")))

    async def _on_caller_text(self, msg: dict[str, Any]) -> None:
        final = msg["type"].endswith(".completed")
        self.emit(CallerText(str(msg["transcript"] if final else msg["delta"]), final=final))

    async def _on_speech(self, msg: dict[str, Any]) -> None:
        self.emit(CallerSpeechStarted() if msg["type"].endswith("started") else CallerSpeechStopped())

    async def _on_call_done(self, msg: dict[str, Any]) -> None:
        self.responses.record_call(str(msg.get("response_id") or self.responses.active or ""), msg)

    async def _on_item_done(self, msg: dict[str, Any]) -> None:
        if msg["item"].get("type") == "function_call":
            self.responses.record_call(str(msg.get("response_id") or self.responses.active or ""), msg["item"])

    async def _on_response_done(self, msg: dict[str, Any]) -> None:
        response = msg["response"]
        rid = str(response.get("id") or self.responses.active or "")
        status = str(response.get("status") or "completed")
        for item in response.get("output") or []:
            if isinstance(item, Mapping) and item.get("type") == "function_call":
                self.responses.record_call(rid, item)
        calls = self.responses.done(rid)
        if calls and status == "completed":
            self.spawn(self._run_calls(calls), f"openai-realtime-tools-{self.session.call_id}")
        elif calls:
            log.info("%s: %d tool calls of a %s response are not run", self.name, len(calls), status)
        if status == "completed" and not calls and self._notes:
            await self._drop_notes(rid)
        else:
            self._created_no.pop(rid, None)
        if status == "failed":  # e.g. the quota ran out mid-call: the provider's reason, once
            self.emit(wire.failure_notice(self.name, response.get("status_details")))
        usage = wire.usage_report(response.get("usage"), *self.audio.usage_seconds())
        if usage is not None:
            self.emit(usage)
        self.emit(ResponseDone(status))
        await self._drain()

    async def _on_error(self, msg: dict[str, Any]) -> None:
        err = msg.get("error")
        err = err if isinstance(err, Mapping) else {}
        code, event_id, param = err.get("code"), err.get("event_id"), err.get("param")
        text = str(err.get("message") or "unknown error")[:300] + (f" (param {str(param)[:120]})" if param else "")
        update = next((u for u in self._updates if u.event_id == event_id), None)
        if update is not None:
            self._updates.remove(update)
            update.done.set_result(False)
        if isinstance(event_id, str) and self.responses.refused(event_id, code):
            return  # crossed a response server VAD started: asked again after it, or stale and dropped
        if code == "response_cancel_not_active":
            return  # the response ended before the cancel arrived
        log.warning("%s: provider error %s: %s", self.name, code, text)
        self.emit(
            ProviderNotice(f"{self.name}: {text}", fatal=code in wire.FATAL_CODES, code=str(code) if code else None)
        )
        await self._drain()

    async def _on_rate_limits(self, msg: dict[str, Any]) -> None:
        limits = msg["rate_limits"]
        if not isinstance(limits, list):
            raise TypeError("rate_limits is not a list")
        self.reports.rate_limits(limits)

    async def _on_transcription_failed(self, msg: dict[str, Any]) -> None:
        notice = wire.transcription_notice(self.name, msg.get("error"))
        log.warning("%s", notice.message)
        self.emit(notice)

    async def _on_session_updated(self, msg: dict[str, Any]) -> None:
        if self._updates:
            update = self._updates.popleft()
            self.session.shown_tools = update.names
            if not update.done.done():
                update.done.set_result(True)


OpenAIRealtimeSession.handlers = {
    "response.created": OpenAIRealtimeSession._on_created,
    "response.output_audio.delta": OpenAIRealtimeSession._on_audio,
    "response.output_audio.done": OpenAIRealtimeSession._on_audio_done,
    "response.output_audio_transcript.delta": OpenAIRealtimeSession._on_text,
    "response.output_audio_transcript.done": OpenAIRealtimeSession._on_text,
    "response.output_text.delta": OpenAIRealtimeSession._on_text,
    "response.output_text.done": OpenAIRealtimeSession._on_text,
    "conversation.item.input_audio_transcription.delta": OpenAIRealtimeSession._on_caller_text,
    "conversation.item.input_audio_transcription.completed": OpenAIRealtimeSession._on_caller_text,
    "input_audio_buffer.speech_started": OpenAIRealtimeSession._on_speech,
    "input_audio_buffer.speech_stopped": OpenAIRealtimeSession._on_speech,
    "response.function_call_arguments.done": OpenAIRealtimeSession._on_call_done,
    "response.output_item.done": OpenAIRealtimeSession._on_item_done,
    "response.done": OpenAIRealtimeSession._on_response_done,
    "error": OpenAIRealtimeSession._on_error,
    "session.updated": OpenAIRealtimeSession._on_session_updated,
    "rate_limits.updated": OpenAIRealtimeSession._on_rate_limits,
    "conversation.item.input_audio_transcription.failed": OpenAIRealtimeSession._on_transcription_failed,
}
