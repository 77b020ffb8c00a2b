"""A live call's engine-side parts: what opens it, the runtime record, the turn hooks' shape and the per-turn tool
gateway.

Apart from ``engine.calls.manager`` (which re-exports them) so the realtime and usage halves of the call manager can
import these without the manager itself, and so calls.py stays one job: the call lifecycle and its turns.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from engine.providers.base import ProviderSession, ToolCallRequest, TurnReply
from engine.sessions.history import ToolCallItem, ToolResultItem
from engine.sessions.session import CallSession
from engine.tools.execution import ToolExecutor
from engine.tools.validation import ArgumentError, parse_arguments
from engine.tools.view import ToolView
from engine.usage.meter import UsageMeter

Deliver = Callable[[CallSession, str], Awaitable[None]]


@dataclass(frozen=True)
class CallOpening:
    """What a new call is asked with, as ``start_call`` and ``start_realtime_call`` both hand it to the manager's
    ``open_call``; ``extra`` holds the campaign's keys (``campaign_id``, ``lead_id``)."""

    context: str
    provider: str | None
    caller_name: str | None
    caller_number: str | None
    direction: str
    channel_id: str | None
    deliver: Deliver | None
    call_id: str | None
    extra: Mapping[str, Any]


class TurnHooks(Protocol):
    """Called around every turn (the budget layer's tier selector and turn accounting)."""

    def before_turn(self, session: CallSession, text: str) -> None: ...

    def after_turn(self, session: CallSession) -> None: ...


@runtime_checkable
class StartTier(Protocol):
    """A turn hook that also sets a new call's tier before its first turn (the operator's global default)."""

    def start_tier(self, session: CallSession) -> tuple[str, str]: ...


@dataclass
class CallRuntime:
    """Engine-side state of a live call that is not part of the session record."""

    provider_session: ProviderSession
    provider_name: str
    deliver: Deliver | None = None
    turn_task: asyncio.Task[TurnReply] | None = None
    restart_requested: bool = False
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    view: ToolView | None = None
    #: Realtime calls: a caller turn is open (its hooks ran; the agent's answer closes it).
    turn_open: bool = False
    #: Realtime calls: apply-now pushes still running (kept referenced until done).
    pushes: set[asyncio.Task[None]] = field(default_factory=set)
    usage: UsageMeter | None = None
    #: Set by the meter when the call's budget is used up: ``wrap_up`` or ``ask_operator`` (engine.calls.usage).
    budget_action: str | None = None


class EngineGateway:
    """The ToolGateway a provider gets for one turn: records calls in history and runs them via the executor."""

    def __init__(self, executor: ToolExecutor, session: CallSession) -> None:
        self.executor = executor
        self.session = session

    async def call_tools(self, calls: Sequence[ToolCallRequest]) -> list[ToolResultItem]:
        history = self.session.history
        group = history.new_group()
        items: list[ToolCallItem] = []
        for c in calls:
            try:
                args = parse_arguments(c.arguments, self.executor.argument_limits())
            except ArgumentError:  # kept as the model wrote it; an object beyond the bounds cannot be kept safely
                args = {"_raw": c.arguments if isinstance(c.arguments, str) else ""}
            ids = (("provider", c.provider_id),) if c.provider_id else ()
            item = ToolCallItem(history.new_call_id(), c.name, args, group, provider_ids=ids)
            history.add(item)
            items.append(item)
        results = await self.executor.execute_many(
            self.session, [(c.name, c.arguments, item.id) for c, item in zip(calls, items, strict=True)]
        )
        out: list[ToolResultItem] = []
        for item, r in zip(items, results, strict=True):
            res = ToolResultItem(item.id, item.name, r.status, r.speech, r.data)  # the caller never hears raw text
            history.add(res)
            out.append(res)
        return out
