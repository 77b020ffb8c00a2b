"""The Deepgram agent's client-side function calls: run each through the gateway, answer it once, or never.

Why it exists: a ``FunctionCallRequest`` may carry several calls, some of them for Deepgram to run itself
(``client_side: false``), and any of them may be withdrawn by a ``FunctionCallCancelled`` while it runs (the
caller kept talking after a speculative end of turn, or barged in). The rules are easy to get wrong in a reader
loop, so they live here: only ``client_side: true`` calls are executed; each runs as its own task through the
``ToolGateway`` (the engine's one execution path), so the calls of one request run concurrently and one can be
cancelled alone; each is answered with exactly one ``FunctionCallResponse`` carrying the request's ``id`` and
``name`` unchanged; a cancelled call's task is stopped and no response is ever sent for its id; a call whose
socket dropped is left to finish (its result is in the history the resumed session gets) but is not answered.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from engine.providers.base import ToolCallRequest, ToolGateway
from engine.providers.textloop import result_text
from engine.sessions.history import History, ToolResultItem

log = logging.getLogger(__name__)

PROVIDER_TYPE = "deepgram_agent"
#: What the history records for a call the agent withdrew while it ran (no result reached the agent).
CANCELLED = "cancelled by the agent before it finished; no result was sent"

Send = Callable[[dict[str, Any]], Awaitable[bool]]


def _arguments(value: Any) -> str | dict[str, Any] | None:
    """The arguments as the gateway takes them: the JSON string Deepgram sends (anything else re-encoded, so
    the engine's parser names what is wrong with it)."""
    if value is None or isinstance(value, str | dict):
        return value
    return json.dumps(value)


class FunctionCalls:
    """The calls of one session that are running and still owed a response, by the agent's id."""

    def __init__(
        self, provider: str, gateway: ToolGateway, history: History, send: Send, exposed: Callable[[str], str]
    ) -> None:
        self.provider = provider
        self._gateway = gateway
        self._history = history
        self._send = send
        self._exposed = exposed
        self._owed: dict[str, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()  # every call still running, owed a response or not

    @property
    def outstanding(self) -> frozenset[str]:
        """Ids still owed a response."""
        return frozenset(self._owed)

    def request(self, functions: Any) -> None:
        """Start every client-side call of a ``FunctionCallRequest``; malformed items are logged and skipped."""
        if not isinstance(functions, list):
            raise TypeError(f"functions is a {type(functions).__name__}, not a list")
        for f in functions:
            fid = f.get("id") if isinstance(f, dict) else None
            name = f.get("name") if isinstance(f, dict) else None
            if not isinstance(fid, str) or not fid or not isinstance(name, str) or not name:
                log.warning("%s: ignored a function call without an id or a name: %.200r", self.provider, f)
                continue
            assert isinstance(f, dict)
            if f.get("client_side") is not True:
                log.debug("%s: %s (%s) runs on the agent's side", self.provider, name, fid)
                continue
            if fid in self._owed:
                log.warning("%s: ignored a repeated request for function call %r", self.provider, fid)
                continue
            sig = f.get("thought_signature")
            meta = {"thought_signature": sig} if isinstance(sig, str) and sig else None
            task = asyncio.create_task(self._run(fid, name, f.get("arguments"), meta), name=f"deepgram:call:{fid}")
            self._owed[fid] = task
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _run(self, fid: str, name: str, arguments: Any, meta: dict[str, str] | None) -> None:
        me = asyncio.current_task()
        try:
            req = ToolCallRequest(self._exposed(name), _arguments(arguments), provider_id=fid)
            try:
                result = (await self._gateway.call_tools([req]))[0]
                if meta:  # a Gemini think model's signature: the history keeps it for the context on a reconnect
                    self._history.annotate_call(result.call_id, PROVIDER_TYPE, meta)
                content = result_text(result)
            except Exception as e:  # the engine failing must still answer the agent, so the call goes on
                log.warning("%s: function call %s failed in the engine: %s", self.provider, name, e)
                content = result_text(ToolResultItem("", name, "error", f"{name} failed: {type(e).__name__}"))
            if self._owed.get(fid) is not me:
                return  # cancelled or abandoned while it ran: the agent must not get a late response
            del self._owed[fid]
            await self._send({"type": "FunctionCallResponse", "id": fid, "name": name, "content": content})
        except asyncio.CancelledError:
            self._record_cancelled(fid)
            raise

    def _record_cancelled(self, fid: str) -> None:
        """Give the history's unanswered call for ``fid`` a result, so every later request stays well-formed."""
        for item in self._history.pending_tool_calls():
            if dict(item.provider_ids).get("provider") == fid:
                self._history.add(ToolResultItem(item.id, item.name, "error", CANCELLED))

    def cancel(self, functions: Any) -> None:
        """``FunctionCallCancelled``: stop those calls; none of them is answered."""
        if not isinstance(functions, list):
            raise TypeError(f"functions is a {type(functions).__name__}, not a list")
        for f in functions:
            fid = f.get("id") if isinstance(f, dict) else None
            task = self._owed.pop(fid, None) if isinstance(fid, str) else None
            if task is None:
                log.debug("%s: cancellation for %r, which is not running", self.provider, fid)
                continue
            log.info("%s: function call %r cancelled by the agent", self.provider, fid)
            task.cancel()

    def abandon_all(self) -> None:
        """The socket dropped: the running calls finish (their results reach the history) but are not answered
        on the new connection, which never asked for them."""
        self._owed.clear()

    async def aclose(self) -> None:
        tasks = list(self._tasks)
        self._owed.clear()
        for t in tasks:
            t.cancel()
        for t in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t
