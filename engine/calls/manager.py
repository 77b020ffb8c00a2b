"""Call lifecycle and turns: start a call, run each user turn through its provider, end it.

A turn computes the call's tool view (allowlist ∩ tier ∩ operator switches), records it as the execution
allowlist, and runs the provider on a snapshot of the canonical history. The turn runs as a task so the operator's
"apply now" can cancel it and restart the same turn, from the same snapshot, with the new tools.

``CallManager`` gets the parts it works with (settings and providers getters, the session store, bus, metrics,
the executor, the view builder and the turn hooks), not the engine.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from engine.calls.capacity import Admission, holding, resume_held
from engine.calls.runtime import CallOpening, CallRuntime, Deliver, EngineGateway, StartTier, TurnHooks
from engine.calls.usage import UsageCalls
from engine.config.models import Settings
from engine.core.metrics import Metrics
from engine.core.tasks import Spawn
from engine.core.templates import prompt_values, render
from engine.events import CallEnded, CallStarted, EngineError, EventBus, ToolsChanged, TranscriptAdded
from engine.providers.base import Provider, ProviderError, Turn, TurnReply
from engine.realtime.calls import RealtimeCalls
from engine.realtime.session import RealtimeProvider, RealtimeSession
from engine.sessions.history import History
from engine.sessions.session import CallError, CallSession
from engine.sessions.steering import operator_lines, whispers_block
from engine.sessions.store import SessionStore
from engine.tools.execution import ToolExecutor
from engine.tools.view import ToolView, ToolViewBuilder

log = logging.getLogger(__name__)

__all__ = ["CallError", "CallManager", "CallRuntime", "Deliver", "EngineGateway", "TurnHooks"]


class CallManager:
    """The call lifecycle and text turns; the realtime and usage parts it holds (``realtime``, ``usage``) get only the
    narrow things they use, and their commands the rest of the engine calls are named here too."""

    def __init__(
        self,
        *,
        settings: Callable[[], Settings],
        providers: Callable[[], Mapping[str, Provider]],
        sessions: SessionStore,
        bus: EventBus,
        metrics: Metrics,
        executor: ToolExecutor,
        views: ToolViewBuilder,
        turn_hooks: Sequence[TurnHooks],
        spawn: Spawn | None = None,
        admission: Admission | None = None,
    ) -> None:
        self._settings = settings
        #: Says whether a new call may start (engine.max_calls, drain); None admits every call.
        self.admission = admission
        self._providers = providers
        self.sessions = sessions
        self.bus = bus
        self.metrics = metrics
        self.executor = executor
        self.views = views
        #: The engine's hook list (read at every turn, so a hook added by the wiring later is seen).
        self.turn_hooks = turn_hooks
        self._runtime: dict[str, CallRuntime] = {}
        self._ids = itertools.count(1)
        #: Starts the background work a synchronous command needs (a realtime session's apply-now push).
        self._spawn = spawn
        #: Told of every call that ended, with its session, before ``call.ended`` (the e-mail summary's enqueue).
        #: Synchronous and quick by contract: a hook does not delay the call's cleanup beyond a local enqueue.
        self.end_hooks: list[Callable[[CallSession], None]] = []
        self.usage = UsageCalls(
            settings=settings,
            bus=bus,
            metrics=metrics,
            runtime=self.runtime,
            live_session=self.live_session,
            say=self._say,
            end_call=self.end_call,
            spawn=spawn,
        )
        self.realtime = RealtimeCalls(
            self, settings=settings, bus=bus, executor=executor, turn_hooks=turn_hooks, spawn=spawn
        )
        # the facade: the voice drivers (RealtimeCallControl), the console and tests call these on the manager
        self.start_realtime_call = self.realtime.start
        self.realtime_session = self.realtime.session
        self.realtime_caller_said = self.realtime.caller_said
        self.realtime_agent_said = self.realtime.agent_said
        self.realtime_record = self.realtime.record
        self.realtime_push_view = self.realtime.push_view
        self.usage_meter = self.usage.meter
        self.budget_wrap_up = self.usage.budget_wrap_up

    def runtime(self, call_id: str) -> CallRuntime | None:
        return self._runtime.get(call_id)

    def live_session(self, call_id: str) -> CallSession | None:
        """The session of a call this manager carries, or None (ended, unknown)."""
        return self.sessions.get(call_id)

    def session(self, call_id: str) -> CallSession:
        s = self.sessions.get(call_id)
        if s is None:
            raise CallError(f"no live call {call_id!r}")
        return s

    async def start_call(
        self,
        context: str,
        *,
        provider: str | None = None,
        caller_name: str | None = None,
        caller_number: str | None = None,
        direction: str = "inbound",
        channel_id: str | None = None,
        deliver: Deliver | None = None,
        call_id: str | None = None,
        **extra: Any,
    ) -> CallSession:
        opening = CallOpening(
            context, provider, caller_name, caller_number, direction, channel_id, deliver, call_id, extra
        )
        session, _ = self.open_call(opening)
        ctx = self._settings().contexts[context]
        greeting = render(ctx.greeting, prompt_values(session)) if ctx.greeting else None
        try:
            if greeting is None:
                greeting = await self._runtime[session.call_id].provider_session.greeting(session)
            if greeting:
                await self._say(session, greeting)
        except asyncio.CancelledError:  # stopped before or during the greeting (a no-op if the caller ended it)
            await asyncio.shield(self.end_call(session.call_id, "ended during the greeting"))
            raise
        return session

    def open_call(self, opening: CallOpening, *, realtime: bool = False) -> tuple[CallSession, CallRuntime]:
        """Create the call (session, provider session, metrics, ``call.started``); ``realtime`` requires a
        speech-to-speech provider (a text provider cannot hear audio, a realtime one cannot take text turns)."""
        context, provider, call_id = opening.context, opening.provider, opening.call_id
        caller_name, caller_number = opening.caller_name, opening.caller_number
        settings = self._settings()
        ctx = settings.contexts.get(context)
        if ctx is None:
            known = ", ".join(sorted(settings.contexts)) or "none"
            raise CallError(f"unknown context {context!r} (known: {known})")
        provider_name = provider or ctx.provider
        providers = self._providers()
        prov = providers.get(provider_name)
        if prov is None:
            raise CallError(f"unknown provider {provider_name!r} (known: {', '.join(sorted(providers))})")
        if realtime and not isinstance(prov, RealtimeProvider):
            kind = prov.type or prov.config.type
            raise CallError(f"provider {provider_name!r} (type {kind}) is not a realtime provider")
        if not realtime and isinstance(prov, RealtimeProvider):
            raise CallError(
                f"provider {provider_name!r} is a realtime (speech-to-speech) provider: it takes voice calls "
                "(the softphone's voice call, or ava-engine call --audio-in), not typed turns"
            )
        if self.admission is not None:
            self.admission.check()  # CallRefused (a CallError) past engine.max_calls or while draining
        held = resume_held(self.sessions) if call_id is None else None  # back from the operator: the same call
        session = CallSession(
            call_id=held.call_id if held is not None else call_id or f"call-{next(self._ids)}",
            context=context,
            provider=provider_name,
            caller_name=caller_name,
            caller_number=caller_number,
            direction="outbound" if opening.direction == "outbound" else "inbound",
            channel_id=opening.channel_id,
            history=History(settings.engine.history_limit),
            campaign_id=opening.extra.get("campaign_id"),
            lead_id=opening.extra.get("lead_id"),
            tier=ctx.tier.default,
            tier_reason="context default",
        )
        for hook in self.turn_hooks:
            if isinstance(hook, StartTier):
                session.tier, session.tier_reason = hook.start_tier(session)
        self.sessions.add(session)
        rt = CallRuntime(prov.open_session(session), provider_name, opening.deliver)
        self._runtime[session.call_id] = rt
        self.usage.open_meter(session, rt)
        self.metrics.calls_active.set(len(self._runtime))
        session.state = "active"
        if held is not None:  # no second call.started: the console keeps the one row it shows
            session.started_at, session.tool_overrides = held.started_at, held.tool_overrides
            session.tier, session.tier_reason, session.tier_override = held.tier, held.tier_reason, held.tier_override
            return session, rt
        self.metrics.calls_total.labels(context).inc()
        self.bus.publish(
            CallStarted(
                call_id=session.call_id,
                context=context,
                provider=provider_name,
                caller_name=caller_name,
                caller_number=caller_number,
                direction=session.direction,
                tier=session.tier,
            )
        )
        return session, rt

    async def _say(self, session: CallSession, text: str) -> None:
        session.history.add_message("assistant", text)
        self.bus.publish(TranscriptAdded(call_id=session.call_id, role="assistant", text=text))
        rt = self._runtime.get(session.call_id)
        if rt is not None and rt.deliver is not None:
            await rt.deliver(session, text)

    def system_prompt(self, session: CallSession) -> str:
        ctx = self._settings().contexts.get(session.context)
        return render(ctx.prompt, prompt_values(session)) if ctx else ""

    def view_for(self, session: CallSession) -> ToolView:
        ctx = self._settings().contexts.get(session.context)
        allow = ctx.tools if ctx else []
        return self.views.view(allow, session.tier, session.tool_overrides, session.tools_revision, session.context)

    async def user_said(self, call_id: str, text: str) -> TurnReply:
        """One user turn: record what was said, run the provider (restarting on apply-now), speak the reply."""
        session = self.session(call_id)
        if not session.active:
            raise CallError(f"call {call_id} has ended")
        rt = self._runtime[call_id]
        if isinstance(rt.provider_session, RealtimeSession):
            raise CallError(f"call {call_id} runs on a realtime provider: it hears the caller's audio, not typed text")
        async with rt.lock:
            session.turn += 1
            session.history.add_message("user", text)
            self.bus.publish(TranscriptAdded(call_id=call_id, role="user", text=text))
            for hook in self.turn_hooks:
                hook.before_turn(session, text)
            marker = session.history.snapshot()
            pending, session.whispers = session.whispers, []  # the operator's, for this turn's requests only
            whispers = whispers_block(pending)
            while True:
                rt = self._runtime[call_id]
                view = self.view_for(session)
                self.announce_view_change(session, rt.view, view)
                rt.view = view
                session.shown_tools = view.names
                await rt.provider_session.update_tools(view)
                turn = Turn(
                    session=session,
                    system_prompt=self.system_prompt(session) + whispers,
                    history=session.history.items(),
                    view=view,
                    tools=EngineGateway(self.executor, session),
                    current_history=session.history.items,
                )
                rt.restart_requested = False
                rt.turn_task = asyncio.create_task(
                    rt.provider_session.run_turn(turn), name=f"turn:{call_id}:{session.turn}"
                )
                try:
                    reply = await rt.turn_task
                except asyncio.CancelledError:
                    if rt.restart_requested:
                        said = operator_lines(session.steering, session.history.items()[marker:])
                        session.history.restore(marker)
                        for line in said:  # the operator's say-now lines were heard: they stay
                            session.history.add(line)
                        continue
                    session.whispers[:0] = pending  # the turn was abandoned (barge-in): they steer the next one
                    self.turn_done(session)
                    raise
                except ProviderError as e:
                    self.bus.publish(EngineError(message=str(e), call_id=call_id))
                    reply = TurnReply("Sorry, I'm having trouble answering right now.", meta={"error": str(e)})
                finally:
                    rt.turn_task = None
                break
            self.turn_done(session)
            self.usage.count_turn(session, rt, reply)
            text = reply.text or (session.farewell or "" if session.hangup_requested else "")
            if text:
                await self._say(session, text)
            if session.hangup_requested:
                await self.end_call(call_id, "hangup")
            await self.usage.wrap_up(session, rt)
            return reply

    def turn_done(self, session: CallSession) -> None:
        for hook in self.turn_hooks:
            hook.after_turn(session)

    def announce_view_change(self, session: CallSession, old: ToolView | None, new: ToolView) -> None:
        """Tell the world when this turn shows the call a different set of tools than its last turn did."""
        if old is None or old.names == new.names:
            return
        self.bus.publish(
            ToolsChanged(
                revision=session.tools_revision,
                call_id=session.call_id,
                added=tuple(sorted(new.names - old.names)),
                removed=tuple(sorted(old.names - new.names)),
                reason=f"tier {new.tier}" if old.tier != new.tier else "tool view changed",
            )
        )

    def cancel_turn(self, call_id: str) -> bool:
        """Barge-in: abandon the turn in flight (its answer is never spoken); the next utterance starts a new turn."""
        rt = self._runtime.get(call_id)
        if rt is None or rt.turn_task is None or rt.turn_task.done():
            return False
        rt.restart_requested = False
        rt.turn_task.cancel()
        return True

    def restart_turn(self, call_id: str) -> bool:
        """Apply now: cancel the turn in flight; ``user_said`` restarts it from the same snapshot. On a realtime
        call the new view goes to the live session with ``apply_now`` (the adapter redoes its response)."""
        rt = self._runtime.get(call_id)
        if rt is not None and isinstance(rt.provider_session, RealtimeSession):
            return self.realtime.apply_now(call_id, rt)
        if rt is None or rt.turn_task is None or rt.turn_task.done():
            return False
        rt.restart_requested = True
        rt.turn_task.cancel()
        return True

    async def switch_provider(self, call_id: str, provider_name: str) -> None:
        session = self.session(call_id)
        prov = self._providers().get(provider_name)
        if prov is None:
            raise CallError(f"unknown provider {provider_name!r}")
        rt = self._runtime[call_id]
        if isinstance(rt.provider_session, RealtimeSession) or isinstance(prov, RealtimeProvider):
            raise CallError(f"call {call_id} cannot switch between a realtime and another provider mid-call")
        async with rt.lock:  # takes effect on the next turn
            old = rt.provider_session
            rt.provider_session = prov.open_session(session)
            rt.provider_name = provider_name
            session.provider = provider_name
            session.tools_revision += 1
        await old.aclose()

    async def end_call(self, call_id: str, reason: str = "ended") -> None:
        session = self.sessions.get(call_id)
        if session is None or session.state == "ended":
            return
        session.state = "ended"
        session.ended_at = time.time()
        session.end_reason = reason
        rt = self._runtime.pop(call_id, None)
        if rt is not None:
            if rt.turn_task is not None and not rt.turn_task.done() and asyncio.current_task() is not rt.turn_task:
                rt.turn_task.cancel()
            try:
                await rt.provider_session.aclose()
            except Exception as e:  # closing a provider must not keep a call alive
                log.warning("closing provider for %s failed: %s", call_id, e)
            self.usage.publish(rt)
        self.metrics.calls_active.set(len(self._runtime))
        if holding(call_id):  # the operator has the caller: the call goes on
            session.state, session.ended_at, session.end_reason = "operator", None, None
            return
        self.sessions.remove(call_id)
        for hook in self.end_hooks:
            try:
                hook(session)
            except Exception as e:  # a hook must never keep a call from ending
                log.warning("call-end hook for %s failed: %s: %s", call_id, type(e).__name__, e)
        self.bus.publish(CallEnded(call_id=call_id, reason=reason, duration_s=round(session.duration_s, 3)))

    async def end_all(self, reason: str = "engine stopping") -> None:
        for call_id in list(self._runtime):
            await self.end_call(call_id, reason)
