"""The call manager's side of usage and cost: a meter per call, each turn's usage counted, the budget's wrap-up.

Why apart from engine/calls/manager.py: the lifecycle there stays about turns; this part (as
``engine.realtime.calls`` is), held by the manager and given only the few call commands it uses, holds what a
call's consumption changes — the meter opened with the call (engine.usage.meter), the turn's report added after it,
the farewell and hang-up when ``on_budget: wrap_up`` and the budget is used up, and the ``call.usage`` total when
the call ends.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from engine.config.models import Settings
from engine.core.metrics import Metrics
from engine.core.tasks import Spawn
from engine.events import EventBus
from engine.providers.base import ProviderError, TurnReply
from engine.realtime.session import RealtimeSession
from engine.sessions.session import CallSession
from engine.usage.meter import UsageMeter, meter_for, priced_as

if TYPE_CHECKING:
    from engine.calls.runtime import CallRuntime

log = logging.getLogger(__name__)


class UsageCalls:
    """The call manager's usage part: given the settings, bus and metrics, and the few call commands it needs."""

    def __init__(
        self,
        *,
        settings: Callable[[], Settings],
        bus: EventBus,
        metrics: Metrics,
        runtime: Callable[[str], CallRuntime | None],
        live_session: Callable[[str], CallSession | None],
        say: Callable[[CallSession, str], Awaitable[None]],
        end_call: Callable[[str, str], Awaitable[None]],
        spawn: Spawn | None = None,
    ) -> None:
        self._settings = settings
        self._bus = bus
        self._metrics = metrics
        self._runtime = runtime
        self._live_session = live_session
        self._say = say
        self._end_call = end_call
        self._spawn = spawn

    def open_meter(self, session: CallSession, rt: CallRuntime) -> None:
        def reached(action: str) -> None:
            rt.budget_action = action

        rt.usage = meter_for(
            self._settings(),
            call_id=session.call_id,
            context=session.context,
            provider=rt.provider_name,
            metrics=self._metrics,
            bus=self._bus,
            on_reached=reached,
        )

    def count_turn(self, session: CallSession, rt: CallRuntime, reply: TurnReply) -> None:
        if rt.usage is not None:
            if rt.usage.provider != rt.provider_name:  # switched since the last turn: this one is the new provider's
                rt.usage.switch(rt.provider_name, *priced_as(self._settings(), rt.provider_name))
            rt.usage.add(reply.usage, session.turn)

    async def wrap_up(self, session: CallSession, rt: CallRuntime) -> None:
        """``on_budget: wrap_up`` and the budget is used up: the farewell, then the call ends."""
        if rt.budget_action == "wrap_up" and session.active:
            await self._say(session, self.farewell(session))
            await self._end_call(session.call_id, "budget reached")

    def budget_wrap_up(self, call_id: str) -> bool:
        """A realtime call's budget is used up with ``on_budget: wrap_up``: the provider is told to say the farewell
        and the call counts as hung up (its driver ends it once that has played). False when nothing is to do."""
        rt, session = self._runtime(call_id), self._live_session(call_id)
        live = rt.provider_session if rt is not None else None
        if rt is None or session is None or rt.budget_action != "wrap_up" or not isinstance(live, RealtimeSession):
            return False
        if session.hangup_requested:
            return False
        session.hangup_requested = True
        session.farewell = self.farewell(session)

        async def say() -> None:
            try:
                await live.steer("say", session.farewell or "")
            except ProviderError as e:  # the driver hangs up after its farewell timeout anyway
                log.warning("%s: the budget's farewell was not sent: %s", call_id, e)

        name = f"budget-farewell:{call_id}"
        self._spawn(say(), name=name) if self._spawn is not None else _keep(asyncio.create_task(say(), name=name))
        return True

    def farewell(self, session: CallSession) -> str:
        """What the agent says when the engine ends the call: the context's ``farewell``, else the hang-up tool's."""
        settings = self._settings()
        ctx = settings.contexts.get(session.context)
        return (ctx.farewell if ctx is not None else None) or settings.tools.hangup.farewell

    def meter(self, call_id: str) -> UsageMeter | None:
        """The live call's usage meter (a realtime driver hands it its provider's reports)."""
        rt = self._runtime(call_id)
        return rt.usage if rt is not None else None

    def publish(self, rt: CallRuntime) -> None:
        """``call.usage``, when the call used or cost anything."""
        if rt.usage is not None and (rt.usage.reports or rt.usage.priced_by_time):
            self._bus.publish(rt.usage.final())


_TASKS: set[asyncio.Task[None]] = set()


def _keep(task: asyncio.Task[None]) -> None:
    """Hold a task started without the engine's task group until it is done."""
    _TASKS.add(task)
    task.add_done_callback(_TASKS.discard)
