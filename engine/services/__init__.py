"""What the engine hands every component: one ``Services`` record, kept by the ``Component`` base.

Why it exists: e-mail, the recorder, the store, the budget layer, the MCP endpoint, the HTTP remote and the control
stream each took the same settings getter, event bus, metrics and ``spawn`` one argument at a time and stored them
the same way, and the wiring spelled the four out again for each. The wiring now builds the record once
(``engine.components.services``) and each component keeps it through ``Component.__init__``.

``restart_if_changed`` is the reload of a part that reads its section of the settings only at start (stop, then
start, when that section changed): the recorder, the store, the control stream, the shared latency book and
telephony each spelled it out.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from engine.config.models import Settings
    from engine.core.metrics import Metrics
    from engine.core.tasks import Spawn
    from engine.events import EventBus


@dataclass(frozen=True, slots=True)
class Services:
    """The engine's shared services: the live settings (a getter: a reload swaps them), the event bus, the metrics
    and ``spawn`` (a named task in the engine's task group)."""

    settings: Callable[[], Settings]
    bus: EventBus
    metrics: Metrics
    spawn: Spawn


class Component(ABC):
    """An engine component (``engine.components.EngineComponent``): its lifecycle, and the ``Services`` it is
    handed, kept under the names every component uses. A subclass sets ``name``."""

    name: str

    def __init__(self, services: Services) -> None:
        self._settings = services.settings
        self.bus = services.bus
        self.metrics = services.metrics
        self._spawn = services.spawn

    @abstractmethod
    async def start(self) -> None: ...

    @abstractmethod
    async def stop(self) -> None: ...

    @abstractmethod
    async def reload(self, old: Settings, new: Settings) -> None: ...


class Restartable(Protocol):
    """A part with a start and a stop (every ``Component``, and parts wired beside them)."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...


async def restart_if_changed(
    part: Restartable, old: Settings, new: Settings, section: Callable[[Settings], object]
) -> bool:
    """A reload for a part that reads its settings only at start: stop it, then start it, when ``section`` (what it
    reads) differs between the ``old`` and ``new`` settings; True if it restarted."""
    if section(old) == section(new):
        return False
    await part.stop()
    await part.start()
    return True
