"""Gemini Live tool calls: each ``functionCalls`` entry runs through the gateway and is answered by its own id.

Why it exists: the call bookkeeping is the part of the Gemini adapter with the strictest rules, so it lives on
its own. Every call of a ``toolCall`` message runs as its own task through the engine's ``ToolGateway`` (so
parallel calls run concurrently and each result is sent as soon as it is ready, with the SAME ``id`` and
``name`` the model used); ``toolCallCancellation`` drops those results — they are never sent — and cancels the
gateway call if it is still running; a socket that dropped leaves its calls orphaned (their results cannot be
matched on a new connection, so they are dropped and named in a notice). A running NON_BLOCKING call can carry
a slow-tool announcement as an interim ``willContinue`` response scheduled ``WHEN_IDLE``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from engine.providers.base import ToolCallRequest, ToolGateway
from engine.realtime.gemini_wire import GeminiOptions, function_response, interim_response
from engine.sessions.history import History, ToolResultItem

log = logging.getLogger(__name__)

CANCELLED = "cancelled by Gemini before it finished; no result was sent"
SendResponses = Callable[[list[dict[str, Any]]], Awaitable[bool]]


@dataclass(slots=True)
class OpenCall:
    """One function call the model is waiting on (or, NON_BLOCKING, will hear about)."""

    id: str
    name: str  # the provider's name, echoed back
    exposed: str
    non_blocking: bool
    task: asyncio.Task[None] | None = None
    announced: bool = False
    #: The connection it came on dropped: its result can no longer be delivered.
    orphaned: bool = False
    cancelled: bool = False
    #: Its result is being written to the socket: a cancellation now has crossed it.
    sending: bool = False


class GeminiCalls:
    """The open calls of one session; ``on_settled`` runs whenever a call is answered, dropped or cancelled."""

    def __init__(
        self,
        provider: str,
        gateway: ToolGateway,
        opts: GeminiOptions,
        send: SendResponses,
        on_settled: Callable[[], Awaitable[None]],
        history: History | None = None,
    ) -> None:
        self.provider = provider
        self.history = history
        self.gateway = gateway
        self.opts = opts
        self._send = send
        self._on_settled = on_settled
        self.open: dict[str, OpenCall] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # every call task stays referenced until it is done

    @property
    def waiting(self) -> bool:
        """Calls whose results the current connection still expects."""
        return any(not c.orphaned for c in self.open.values())

    @property
    def blocking(self) -> bool:
        """A BLOCKING call is running: the model waits for its result, and on Gemini 3.x any new content from the
        client cancels it (reference/wire-formats.md §6.4)."""
        return any(not (c.non_blocking or c.orphaned or c.cancelled) for c in self.open.values())

    def start(self, call_id: str, name: str, exposed: str, args: Any, non_blocking: bool) -> None:
        if call_id in self.open:
            log.warning("%s: the model repeated the open call id %r; ignored", self.provider, call_id)
            return
        call = OpenCall(call_id, name, exposed, non_blocking)
        self.open[call_id] = call
        call.task = asyncio.create_task(self._run(call, args), name=f"{self.provider}:tool:{call_id}")
        self._tasks.add(call.task)
        call.task.add_done_callback(self._tasks.discard)

    async def _run(self, call: OpenCall, args: Any) -> None:
        arguments = args if isinstance(args, dict | str) or args is None else str(args)
        try:
            try:
                results = await self.gateway.call_tools([ToolCallRequest(call.exposed, arguments, call.id)])
                item = results[0]
            except asyncio.CancelledError:
                self._record_cancelled(call)
                raise
            except Exception as e:  # the engine's path failed: the model still gets an answer
                log.warning("%s: tool %s failed in the engine: %s", self.provider, call.exposed, type(e).__name__)
                item = ToolResultItem(call.id, call.exposed, "error", f"the engine could not run {call.exposed}")
            if call.cancelled or call.orphaned:
                self._drop(call, "cancelled by the provider" if call.cancelled else "its connection dropped")
                return
            fr = function_response(
                call.id, call.name, item, self.opts, non_blocking=call.non_blocking, ends_stream=call.announced
            )
            call.sending = True  # still open (a planned reconnect waits for it) until the socket has it
            if not await self._send([fr]):
                log.warning("%s: the result of %s (%s) could not be sent", self.provider, call.exposed, call.id)
        finally:
            self.open.pop(call.id, None)
            await self._on_settled()

    def _record_cancelled(self, call: OpenCall) -> None:
        """The history's unanswered call gets a result, so every later request (a provider switch) is well-formed."""
        if self.history is None:
            return
        for item in self.history.pending_tool_calls():
            if dict(item.provider_ids).get("provider") == call.id:
                self.history.add(ToolResultItem(item.id, item.name, "error", CANCELLED))

    def _drop(self, call: OpenCall, why: str) -> None:
        log.info("%s: result of %s (%s) not sent: %s", self.provider, call.exposed, call.id, why)

    def cancel(self, ids: list[Any]) -> None:
        """``toolCallCancellation``: never answer these ids; stop their gateway calls where still running."""
        for raw in ids:
            call = self.open.get(str(raw))
            if call is None:
                log.info("%s: cancellation for unknown or finished call %r ignored", self.provider, raw)
                continue
            if call.sending:
                log.info("%s: cancellation of %s crossed its result on the wire", self.provider, call.id)
                continue
            call.cancelled = True
            self.open.pop(call.id, None)
            self._drop(call, "cancelled by the provider")
            if call.task is not None and not call.task.done():
                call.task.cancel()

    def orphan_all(self) -> list[str]:
        """The connection dropped: results of calls still running cannot be matched any more."""
        names = []
        for call in list(self.open.values()):
            if not call.orphaned:
                call.orphaned = True
                names.append(call.exposed)
        return names

    async def announce(self, text: str) -> bool:
        """A running NON_BLOCKING call carries ``text`` as an interim result the model speaks when idle."""
        call = next(
            (c for c in self.open.values() if c.non_blocking and not (c.orphaned or c.announced or c.sending)), None
        )
        if call is None:
            return False
        call.announced = True
        return await self._send([interim_response(call.id, call.name, text)])

    async def say(self, text: str) -> bool:
        """A tool's question while calls run: an interim result of a running NON_BLOCKING call (the model says
        it; the call stays open). False while a BLOCKING call runs — the model waits for that result and any
        other content would cut it off (reference/wire-formats.md §6.4) — or when no call can carry it."""
        live = [c for c in self.open.values() if not (c.orphaned or c.cancelled)]
        call = next((c for c in live if c.non_blocking and not c.sending), None)
        if call is None or any(not c.non_blocking for c in live):
            return False
        call.announced = True  # its final result ends the stream of interim ones
        return await self._send([interim_response(call.id, call.name, text)])

    async def aclose(self) -> None:
        tasks = [t for t in self._tasks if not t.done()]
        for c in self.open.values():
            c.cancelled = True
        for t in tasks:
            t.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self.open.clear()
