"""An in-process ``RemoteEngines`` for the attached console's unit tests: engines, their events and their answers
are scripted by the test, commands are recorded.

Why a double here: the console's side of ``--attach`` (renaming call ids, the Engine column, routing a command to
the call's engine, an engine lost, the link lost and back) is tested without Redis or a second process; the real
clients are tested against the real console in ``tests/integration`` (three ``ava-engine serve`` on redis-server).
The double keeps the protocol's promises that matter to the console: ``follow`` yields the live engines' history
first, then live items; a lost link ends ``follow`` with ``RemoteError`` and the next ``follow`` resumes after the
last item seen; ``send`` to an unknown or gone engine is a ``RemoteError`` naming it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

from engine import EngineInfo, EngineJoined, EngineLost, RemoteError, RemoteEvent
from engine.events import Event
from engine.remote.base import Followed

Answer = Callable[[str, str, dict[str, Any]], dict[str, Any]]


class InProcessRemote:
    """Engines the test scripts: ``join``, ``emit``, ``lose``, ``break_link``; ``sent`` lists every command."""

    def __init__(self, description: str = "redis://127.0.0.1:6390/0", answer: Answer | None = None) -> None:
        self.description = description
        self.live: dict[str, EngineInfo] = {}
        self.history: list[Followed] = []
        self.sent: list[tuple[str, str, dict[str, Any]]] = []
        self.connects = 0
        self.closed = False
        self.fail_connect: str | None = None
        #: Set: ``engines()`` fails with it (the remote side unreachable while ``follow`` rides it out silently).
        self.unreachable: str | None = None
        self._answer = answer
        self._items: asyncio.Queue[Followed | RemoteError] = asyncio.Queue()
        self._entry = 0

    # ---------------------------------------------------------------------------------------- scripting

    def join(self, engine_id: str, **info: Any) -> None:
        engine = EngineInfo(engine_id, **info)
        self.live[engine_id] = engine
        self._items.put_nowait(EngineJoined(engine))

    def emit(self, engine_id: str, *events: Event) -> None:
        for ev in events:
            self._entry += 1
            item = RemoteEvent(engine_id, f"{self._entry}-0", ev)
            self.history.append(item)
            self._items.put_nowait(item)

    def lose(self, engine_id: str, reason: str = "heartbeat expired") -> None:
        self.live.pop(engine_id, None)
        self._items.put_nowait(EngineLost(engine_id, clean=False, reason=reason))

    def break_link(self, why: str = "Connection closed by server") -> None:
        self._items.put_nowait(RemoteError(f"{self.description}: {why}"))

    # ----------------------------------------------------------------------------------------- protocol

    async def connect(self) -> None:
        self.connects += 1
        if self.fail_connect is not None:
            raise RemoteError(f"{self.description}: {self.fail_connect}")

    async def close(self) -> None:
        self.closed = True

    async def engines(self) -> dict[str, EngineInfo]:
        if self.unreachable is not None:
            raise RemoteError(f"{self.description}: {self.unreachable}")
        return dict(self.live)

    async def follow(self) -> AsyncIterator[Followed]:
        while True:
            item = await self._items.get()
            if isinstance(item, RemoteError):
                raise item
            yield item

    async def send(
        self, engine_id: str, command: str, args: Mapping[str, Any], timeout_s: float = 5.0
    ) -> dict[str, Any]:
        self.sent.append((engine_id, command, dict(args)))
        if engine_id not in self.live:
            raise RemoteError(f"{command}: engine {engine_id} is gone (no heartbeat at {self.description})")
        if self._answer is not None:
            return self._answer(engine_id, command, dict(args))
        if command == "server_status":
            return {"servers": []}
        return {"ok": True}
