"""``ava-console --attach URL``: the console over engines elsewhere (a Redis store, or one engine's HTTP API).

Why it exists: an attached console builds no engine; it follows a ``RemoteEngines`` client (``engine.open_remote``)
and feeds what comes into the SAME screens through the same path the local pump uses (``EventBatch`` messages into
``ConsoleState.apply``). Call ids repeat across engines, so every id naming a call (or an approval, or a tool's
question) is rewritten to ``call_ref(engine, id)`` before the state sees it; the screens then key calls of
different engines apart and split the ref back where they show or route one. Engines joining and leaving, and the
link to the remote side going down and coming back, are posted as ``EnginesChanged`` in the order they happened
relative to the events, so an engine's calls are marked lost only after its last events were applied.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from textual.message import Message

from console.messages import EventBatch

if TYPE_CHECKING:
    from engine import EngineInfo, EngineJoined, EngineLost, RemoteEngines, RemoteEvent
    from engine.events import Event

    Followed = RemoteEvent | EngineJoined | EngineLost

#: Event fields that name something per engine (a call, an approval, a tool's question): rewritten to engine/id.
REF_FIELDS = ("call_id", "approval_id", "elicitation_id")
#: Items kept while the screens are behind; past this the oldest events are dropped (and counted).
MAX_PENDING = 50_000
#: Reconnect backoff (seconds): first wait, longest wait.
RETRY_FIRST_S, RETRY_MAX_S = 0.2, 5.0
#: How often the link asks the remote side for its engines, to know whether it is reachable (a client's ``follow``
#: may ride out a lost connection by itself, silently), and how long that answer may take.
PROBE_S, PROBE_TIMEOUT_S = 1.0, 3.0


def rename(ev: Event, engine_id: str) -> Event:
    """``ev`` with every per-engine id (``REF_FIELDS``, and a server state's server) rewritten to ``engine_id/id``
    (empty and None kept)."""
    from engine import call_ref

    changes: dict[str, Any] = {}
    for name in REF_FIELDS:
        value = getattr(ev, name, None)
        if isinstance(value, str) and value:
            changes[name] = call_ref(engine_id, value)
    if ev.type == "server.state":  # each engine runs its own servers: "dice" on two engines is two rows
        changes["server"] = call_ref(engine_id, str(getattr(ev, "server", "")))
    return dataclasses.replace(ev, **changes) if changes else ev


def engine_of(ref: str | None) -> str:
    """The engine part of a call ref ("" for a local call id or None)."""
    if not ref:
        return ""
    engine_id, sep, _rest = ref.partition("/")
    return engine_id if sep else ""


def local_id(ref: str) -> str:
    """The engine's own id in a call ref (the ref itself when it is none)."""
    _engine, sep, rest = ref.partition("/")
    return rest if sep else ref


@dataclass
class EngineRow:
    """One engine as the engine list shows it: what its heartbeat said, and whether it is still there."""

    id: str
    info: EngineInfo | None = None
    status: str = "live"  # live | draining | gone
    since: float = field(default_factory=time.time)
    reason: str = ""


class EnginesChanged(Message):
    """Engines joined or were lost, or the link to the remote side went down or came back."""

    def __init__(
        self,
        joined: list[EngineInfo] | None = None,
        lost: list[EngineLost] | None = None,
        link: tuple[bool, str] | None = None,
    ) -> None:
        super().__init__()
        self.joined = joined or []
        self.lost = lost or []
        #: (connected, why) when the link's state changed.
        self.link = link


class AttachLink:
    """The attached console's connection: follows the client, batches what comes, posts it to the app."""

    def __init__(self, client: RemoteEngines, interval: float = 0.05) -> None:
        self.client = client
        self.description = client.description
        self.interval = interval
        self.engines: dict[str, EngineRow] = {}
        #: None until the first connect finished; then whether the remote side is reachable now.
        self.connected: bool | None = None
        self.problem = ""
        self.dropped = 0
        self.reconnects = 0
        #: Each engine's MCP tools (exposed name → server), from its ``server_status`` when it joined.
        self.tools: dict[str, dict[str, str]] = {}
        #: Each engine's MCP servers as its ``server_status`` listed them when it joined (then ``server.state``).
        self.servers: dict[str, list[dict[str, Any]]] = {}
        #: Each attached call's tool view as its engine answered ``tool_states`` (name, server, shown, enabled,
        #: reason), with what it was asked for (its tier and the switches then).
        self.call_tools: dict[str, tuple[object, list[dict[str, Any]]]] = {}
        self._pending: deque[Followed | tuple[bool, str]] = deque()
        #: The link's state as last reported to the screens (None: not yet).
        self._reported: bool | None = None
        self._ready = asyncio.Event()
        self._wake = asyncio.Event()

    # ------------------------------------------------------------------------------------------ queries

    def live_engines(self) -> list[str]:
        return [e for e, row in self.engines.items() if row.status != "gone"]

    def header(self) -> str:
        """The header's part: "attached to <description> · N engines", and the link's trouble when it has one."""
        n = len(self.live_engines())
        text = f"attached to {self.description} · {n} engine{'s' if n != 1 else ''}"
        if self.connected is None:
            text += " · connecting…"
        elif not self.connected:
            text += f" · connection lost, retrying ({self.problem})" if self.problem else " · connection lost"
        return text

    # ------------------------------------------------------------------------------------------ updates

    def apply(self, message: EnginesChanged) -> list[str]:
        """Fold a change into the engine list; returns the engines lost by it."""
        now = time.time()
        for info in message.joined:
            status = "draining" if info.draining else "live"
            self.engines[info.id] = EngineRow(info.id, info, status, now)
        lost: list[str] = []
        for gone in message.lost:
            row = self.engines.setdefault(gone.engine_id, EngineRow(gone.engine_id))
            how = "stopped" if gone.clean else "lost"
            row.status, row.since, row.reason = "gone", now, f"{how}: {gone.reason}" if gone.reason else how
            lost.append(gone.engine_id)
        if message.link is not None:
            self.connected, self.problem = message.link
        return lost

    async def fetch_call_tools(self, ref: str, key: object) -> bool:
        """Ask the call's engine what its next turn is shown (``tool_states``), remembered under ``key`` (what the
        screen shows it for: the call's tier and switches); False when that answer was already there."""
        from engine import split_call_ref

        if self.call_tools.get(ref, (None, None))[0] == key:
            return False
        engine_id, call = split_call_ref(ref)
        answer = await self.client.send(engine_id, "tool_states", {"call_id": call}, 5.0)
        tools = [t for t in answer.get("tools") or [] if isinstance(t, dict)]
        self.call_tools[ref] = (key, tools)
        return True

    async def fetch_tools(self, engine_id: str) -> None:
        """Ask a joined engine for its MCP servers and their tools (the Servers screen, the call detail's tools
        table); a failure leaves them to what the events tell."""
        answer = await self.client.send(engine_id, "server_status", {}, 5.0)
        self.servers[engine_id] = [s for s in answer.get("servers") or [] if isinstance(s, dict) and s.get("id")]
        tools: dict[str, str] = {}
        for server in answer.get("servers") or []:
            for tool in server.get("tools") or []:
                name = tool.get("exposed_name")
                if isinstance(name, str) and name:
                    tools[name] = str(server.get("id") or "")
        self.tools[engine_id] = tools

    def wake(self) -> None:
        """An operator's key: what is pending goes to the screens now."""
        self._wake.set()

    def _put(self, item: Followed | tuple[bool, str]) -> None:
        self._pending.append(item)
        if len(self._pending) > MAX_PENDING:
            self._pending.popleft()
            self.dropped += 1
        self._ready.set()

    # ------------------------------------------------------------------------------------------ running

    def _link(self, ok: bool, why: str = "") -> None:
        """The link is up (or down, and why): told to the screens when that changed."""
        if ok != self._reported:
            self._reported = ok
            self._put((ok, why))

    async def run(self, post: Callable[[Message], object]) -> None:
        """Follow the remote side until cancelled: a reader (reconnecting), a prober (is the remote side there?)
        and a flusher (posting in batches)."""
        helpers = [asyncio.ensure_future(self._flush(post)), asyncio.ensure_future(self._probe())]
        try:
            await self._read()
        finally:
            for task in helpers:
                task.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)
            with contextlib.suppress(Exception):
                await self.client.close()

    async def _read(self) -> None:
        from engine import EngineJoined, RemoteError

        delay = RETRY_FIRST_S
        connected = False
        while True:
            try:
                if not connected:
                    await self.client.connect()
                    for info in (await self.client.engines()).values():
                        self._put(EngineJoined(info))
                    connected = True
                else:  # after a failed follow: reachable again? (else RemoteError: wait and ask again)
                    await self.client.engines()
                self._link(True)
                delay = RETRY_FIRST_S
                async for item in self.client.follow():
                    self._put(item)
                why = "the remote side closed the stream"
            except RemoteError as e:
                why = str(e)
            self._link(False, why)
            self.reconnects += 1
            await asyncio.sleep(delay)
            delay = min(delay * 2, RETRY_MAX_S)

    async def _probe(self) -> None:
        """Ask for the engines every ``PROBE_S``: a failure shows the link lost, the next answer shows it back."""
        while True:
            await asyncio.sleep(PROBE_S)
            if self._reported is None:  # the reader has not connected yet: it reports that itself
                continue
            try:
                await asyncio.wait_for(self.client.engines(), PROBE_TIMEOUT_S)
            except TimeoutError:
                self._link(False, f"{self.description} did not answer within {PROBE_TIMEOUT_S:g} s")
            except Exception as e:  # RemoteError (the client's words), or anything the client let through
                self._link(False, str(e) or type(e).__name__)
            else:
                self._link(True)

    async def _flush(self, post: Callable[[Message], object]) -> None:
        from engine import EngineJoined, EngineLost, RemoteEvent

        while True:
            await self._ready.wait()
            self._ready.clear()
            events: list[Event] = []
            while self._pending:
                item = self._pending.popleft()
                if isinstance(item, RemoteEvent):
                    events.append(rename(item.event, item.engine_id))
                    continue
                if events:  # what happened before the change is applied first
                    post(EventBatch(events, self.dropped))
                    events = []
                if isinstance(item, EngineJoined):
                    post(EnginesChanged(joined=[item.info]))
                elif isinstance(item, EngineLost):
                    post(EnginesChanged(lost=[item]))
                elif isinstance(item, tuple):
                    post(EnginesChanged(link=item))
            if events:
                post(EventBatch(events, self.dropped))
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self.interval)


def describe_error(engine_id: str, error: BaseException) -> str:
    """A command's failure as the toast says it: which engine, and why."""
    text = str(error) or type(error).__name__
    return text if engine_id and engine_id in text else f"engine {engine_id}: {text}"
