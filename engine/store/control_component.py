"""The engine's part of the Redis control stream: runs the ``ControlReader`` (``engine.store.control``) in the
engine's task group while ``engine.store`` is Redis, and attaches the consoles that announce themselves as approvers.

Why it is not in ``engine.store.control``: every engine builds this component, but only one with a Redis store reads
commands, and the reader's module imports redis-py (0.2 s): a CLI command or a console on the in-memory store
should not pay for it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.config.models import Settings
from engine.services import Component, Services, restart_if_changed
from engine.store.base import APPROVER_EVERY_S, APPROVER_TTL_S, StoreUnavailable

if TYPE_CHECKING:
    from engine.store.control import ControlReader, Execute

log = logging.getLogger(__name__)


class ControlComponent(Component):
    """Runs the engine's ``ControlReader`` in its task group while ``engine.store`` is Redis (nothing otherwise)."""

    name = "control"

    def __init__(
        self,
        services: Services,
        engine_id: Callable[[], str],
        execute: Execute,
        attach_approver: Callable[[str], Callable[[], None]] | None = None,
    ) -> None:
        super().__init__(services)
        self._engine_id = engine_id
        self._execute = execute
        self._attach_approver = attach_approver
        self.reader: ControlReader | None = None
        self._task: asyncio.Task[None] | None = None
        self._approvers_task: asyncio.Task[None] | None = None
        #: Consoles attached over Redis that answer approvals (``approver_key``), with their detach functions.
        self.approvers: dict[str, Callable[[], None]] = {}

    async def start(self) -> None:
        url = self._settings().engine.store
        if url == "memory":
            return
        from engine.store.control import ControlReader

        self.reader = ControlReader(url, self._engine_id(), self._execute)
        self._task = self._spawn(self.reader.run(), name="store:control")
        if self._attach_approver is not None:
            self._approvers_task = self._spawn(self._follow_approvers(url), name="store:approvers")

    async def stop(self) -> None:
        for task in (self._task, self._approvers_task):
            if task is not None:
                task.cancel()
                await asyncio.wait({task}, timeout=3.0)  # bounded: see redis_store.raise_if_cancelled
        self._task = self._approvers_task = None
        self._set_approvers(set())
        if self.reader is not None:
            await self.reader.close()
            self.reader = None

    def _set_approvers(self, names: set[str]) -> None:
        for name in sorted(set(self.approvers) - names):
            self.approvers.pop(name)()
            log.info("approvals: %s (attached over Redis) left", name)
        for name in sorted(names - set(self.approvers)):
            assert self._attach_approver is not None
            self.approvers[name] = self._attach_approver(f"{name} (attached over Redis)")
            log.info("approvals: %s (attached over Redis) answers them", name)

    async def _follow_approvers(self, url: str) -> None:
        """Attach an approver for each console announcing itself in Redis (``RedisEngines(approver=…)``), so calls
        that need approval wait for it; detach when its key expired, or Redis stayed away as long."""
        from engine.store.redis_store import RedisStore

        store = RedisStore(url)
        last_ok = time.monotonic()
        try:
            while True:
                try:
                    self._set_approvers(await store.approvers())
                    last_ok = time.monotonic()
                except StoreUnavailable:
                    if time.monotonic() - last_ok > APPROVER_TTL_S:
                        self._set_approvers(set())
                await asyncio.sleep(APPROVER_EVERY_S / 2)
        finally:
            await store.close()

    async def reload(self, old: Settings, new: Settings) -> None:
        await restart_if_changed(self, old, new, lambda s: (s.engine.store, s.engine.id))

    def status(self) -> dict[str, Any]:
        """The /health section: whether commands are being read, how many ran and were answered."""
        r = self.reader
        if r is None:
            return {"reading": False}
        return {"reading": r.connected, "executed": r.executed, "answered": r.answered, "last_error": r.last_error}
