"""What a console attached to engines elsewhere reads and sends: the one protocol both attach clients implement.

Why it exists: ``ava-console --attach redis://…`` (many engines sharing a Redis store) and ``--attach
http://host:port`` (one engine over its HTTP API) must look the same to the console: a set of live engines, one
stream of their events (each tagged with its engine, catch-up first, then live) and commands sent to the engine
that owns a call, answered with its result or a clear error. The console codes against ``RemoteEngines`` only;
``open_remote(url)`` picks the client.

Call ids repeat across engines (each engine counts its own), so everything here names a call by engine id and call
id together; ``call_ref``/``split_call_ref`` are the one spelling of that pair (``engine/call``; an engine id never
contains ``/``: ``engine.config.models.scale_out``).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.core.backoff import Backoff
from engine.events import Event

#: Commands an attached console may send; each maps onto the engine's public method of the same name
#: (``engine/__init__.py``) with the same keyword arguments, and answers with a JSON object.
COMMANDS = (
    "set_tier",  # call_id (or None: the engine's default tier), tier
    "set_tool_enabled",  # call_id, exposed_name, enabled, apply ("next_turn" | "now")
    "end_call",  # call_id, reason
    "say_now",  # call_id, text
    "whisper",  # call_id, text
    "approve_tool",  # approval_id, by
    "deny_tool",  # approval_id, reason, by
    "transfer_call",  # call_id, destination, mode ("blind" | "warm"; default blind)
    "drain",
    "resume",
    "calls_info",  # → {"calls": [CallInfo as dict, ...]}
    "server_status",  # → the engine's server_status()
    "tool_states",  # call_id → {"tools": [ToolState as dict, ...]}: what the call's next turn is shown, and why not
)


#: The name a console answers tool approvals under (``RemoteEngines`` clients' ``approver=``; shown in logs).
APPROVER_NAME = re.compile(r"[A-Za-z0-9._@:-]{1,80}")


def check_approver(name: str | None) -> str | None:
    """``name`` when it is a valid approver name (or None), else ``ValueError`` saying what one is."""
    if name is not None and not APPROVER_NAME.fullmatch(name):
        raise ValueError(f"approver name {name[:40]!r}: 1-80 letters, digits, '.', '_', '-', '@' or ':'")
    return name


def call_ref(engine_id: str, call_id: str) -> str:
    """The console's key for a call of an attached engine: ``engine/call``."""
    return f"{engine_id}/{call_id}"


def split_call_ref(ref: str) -> tuple[str, str]:
    """``(engine_id, call_id)`` of a ``call_ref``; ``ValueError`` naming the ref when it is not one."""
    engine_id, sep, call_id = ref.partition("/")
    if not sep or not engine_id or not call_id:
        raise ValueError(f"{ref!r} does not name a call of an attached engine (expected engine/call)")
    return engine_id, call_id


@dataclass(frozen=True, slots=True)
class EngineInfo:
    """A live engine as its heartbeat describes it."""

    id: str
    host: str = ""
    version: str = ""
    contexts: tuple[str, ...] = ()
    max_calls: int | None = None
    live_calls: int = 0
    draining: bool = False
    heartbeat_s: float = 0.0
    #: The heartbeat as written, for anything not named above.
    raw: Mapping[str, Any] = field(default_factory=dict)


def engine_info(engine_id: str, beat: Mapping[str, Any]) -> EngineInfo:
    """An ``EngineInfo`` from a heartbeat as the engine states it (the Redis heartbeat key, the HTTP event stream's
    ``heartbeat`` message: both from ``engine.components.heartbeat_facts``)."""
    cap = beat.get("capacity") if isinstance(beat.get("capacity"), Mapping) else {}
    assert isinstance(cap, Mapping)
    max_calls = cap.get("max_calls")
    return EngineInfo(
        id=engine_id,
        host=str(beat.get("host", "")),
        version=str(beat.get("version", "")),
        contexts=tuple(str(c) for c in beat.get("contexts", ()) or ()),
        max_calls=int(max_calls) if isinstance(max_calls, int) else None,
        live_calls=int(cap.get("live_calls", 0) or 0),
        draining=bool(cap.get("draining", False)),
        heartbeat_s=float(beat.get("heartbeat_s", 0) or 0),
        raw=dict(beat),
    )


@dataclass(frozen=True, slots=True)
class RemoteEvent:
    """One engine's event as an attached console receives it: whose, where in that engine's stream, and what."""

    engine_id: str
    #: The entry id in the engine's stream (rising per engine): a client resumes after the last one it saw.
    entry_id: str
    event: Event


@dataclass(frozen=True, slots=True)
class EngineJoined:
    """An engine registered (or came back): its calls' events follow."""

    info: EngineInfo


@dataclass(frozen=True, slots=True)
class EngineLost:
    """An engine's heartbeat expired (killed, host lost) or it stopped cleanly: its live calls are lost."""

    engine_id: str
    clean: bool
    reason: str


Followed = RemoteEvent | EngineJoined | EngineLost


class RemoteError(RuntimeError):
    """The remote side cannot be reached, refused the request, or a command failed / was not answered in time;
    ``str()`` says which engine, which command and why (never a password or token)."""


#: Both clients' waits before following again after a lost connection: from 0.2 s, doubling, up to 5 s.
RECONNECT = Backoff(0.2, 5.0)


def check_command(engine_id: str, command: str) -> None:
    """``RemoteError`` before anything is sent when ``command`` is not one of ``COMMANDS``."""
    if command not in COMMANDS:
        raise RemoteError(f"unknown command {command!r} for engine {engine_id} (one of {', '.join(COMMANDS)})")


class RemoteEngines(Protocol):
    """A console's view of engines elsewhere."""

    #: The URL without its password or token, for the header and errors.
    description: str

    async def connect(self) -> None:
        """Reach the remote side now (``RemoteError`` with the reason when it cannot)."""
        ...

    async def close(self) -> None: ...

    async def engines(self) -> dict[str, EngineInfo]:
        """Every live engine, by id."""
        ...

    def follow(self) -> AsyncIterator[Followed]:
        """Engines joining and leaving, and their events: first each live engine's retained history (oldest first,
        per engine), then live; across a lost connection it resumes after the last entry seen (nothing twice)."""
        ...

    async def send(
        self, engine_id: str, command: str, args: Mapping[str, Any], timeout_s: float = 5.0
    ) -> dict[str, Any]:
        """Run ``command`` (one of ``COMMANDS``) on ``engine_id`` once and return its answer; ``RemoteError`` when
        the engine is unknown or gone, the command failed there (its message), or no answer came in ``timeout_s``."""
        ...
