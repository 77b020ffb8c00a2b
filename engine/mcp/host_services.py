"""What a supervisor needs from the engine: ``HostServices``, kept narrow so tests can build one without an Engine.

Apart from ``engine.mcp.supervisor`` (which re-exports it) so the host, prober and registration can name it
without the supervisor's state machine, and so the composition root can build it without loading the MCP SDK.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.core.metrics import Metrics
from engine.events import EventBus
from engine.mcp.naming import NameBook
from engine.tools.registry import ToolRegistry

if TYPE_CHECKING:  # the SDK's types name fields only: building the services must not load the SDK (~1 s)
    import mcp.types as types

    from engine.mcp.connection import Elicit


@dataclass(slots=True)
class HostServices:
    """What a supervisor needs from the engine (kept narrow so tests can build one without an Engine)."""

    registry: ToolRegistry
    bus: EventBus
    metrics: Metrics
    base_dir: Path
    redact: Callable[[str], str] | None = None
    #: Adds secrets met at run time (a remote server's OAuth tokens) to what ``redact`` masks.
    remember_secrets: Callable[[Iterable[str]], None] | None = None
    #: How long a burst of list_changed notifications is collected before one re-list.
    debounce_s: float = 0.2
    #: Called once a server is up with its tools registered (the budget layer's calibration hook).
    on_up: Callable[[str], object] | None = None
    #: Starts the supervision loop as a named task of the engine's task group (``engine.core.tasks.Spawn``).
    spawn: Callable[..., asyncio.Task[Any]] | None = None
    #: Every server's exposed-name claims; settles collisions across servers whatever order they come up in.
    names: NameBook = field(default_factory=NameBook)
    #: Answers servers' mid-call questions (engine.elicitation.desk); None: the client offers no elicitation.
    elicit: Elicit | None = None
    #: Gets every server's log messages and resource updates (server id, notification): the MCP endpoint's relay.
    on_notification: Callable[[str, types.ServerNotification], Awaitable[None]] | None = None
