"""The call lifecycle for speech-to-speech providers: start a live session, record what each side said, push views.

Why it exists: a realtime provider (OpenAI Realtime, Gemini Live, Deepgram Voice Agent, ElevenLabs Agents) runs the
turns itself — it hears the caller, decides when a turn ends, answers with audio and calls tools through the
gateway it was given. The engine still owns everything around those turns: the call record and its events, the
tool view (allowlist ∩ tier ∩ operator switches) and when it changes, the history and transcript, the tier
selector's hooks. ``CallManager`` gets these methods from ``RealtimeCalls`` so the text path in engine/calls/manager.py
stays readable; the voice driver (engine/realtime/call.py) calls them as the session's events arrive:

- ``start_realtime_call`` creates the call, shows it its view, and awaits ``session.start(setup)``;
- ``realtime_caller_said`` / ``realtime_agent_said`` record final transcripts, run the turn hooks and push a
  changed view to the live session for the next turn (``realtime_record`` + ``realtime_push_view``: the same in
  two halves, so a driver records at once and pushes from its own task);
- ``restart_turn`` (apply now) on a realtime call pushes the view with ``apply_now=True`` in the background.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from engine.calls.runtime import EngineGateway
from engine.core.templates import prompt_values, render
from engine.events import EngineError, TranscriptAdded
from engine.providers.base import ProviderError
from engine.realtime.session import AudioSpec, RealtimeSession, RealtimeSetup
from engine.sessions.session import CallError, CallSession

if TYPE_CHECKING:
    from engine.calls.runtime import CallRuntime, Deliver, TurnHooks
    from engine.config.models import Settings
    from engine.core.tasks import Spawn
    from engine.events import EventBus
    from engine.sessions.store import SessionStore
    from engine.tools.execution import ToolExecutor
    from engine.tools.view import ToolView

log = logging.getLogger(__name__)


def _same_view(old: ToolView | None, new: ToolView) -> bool:
    """Whether the provider already has ``new``'s tools (a view key also moves when nothing visible changed)."""
    if old is None:
        return False
    return old.key == new.key or (
        old.names == new.names and old.tier == new.tier and old.declarations() == new.declarations()
    )


class _Calls(Protocol):
    """The parts of CallManager the realtime methods use (the mixin's self type)."""

    sessions: SessionStore
    bus: EventBus
    executor: ToolExecutor
    turn_hooks: Sequence[TurnHooks]
    _settings: Callable[[], Settings]
    _spawn: Spawn | None

    def runtime(self, call_id: str) -> CallRuntime | None: ...
    def session(self, call_id: str) -> CallSession: ...
    def view_for(self, session: CallSession) -> ToolView: ...
    def system_prompt(self, session: CallSession) -> str: ...
    def end_call(self, call_id: str, reason: str = ...) -> Awaitable[None]: ...
    def _turn_done(self, session: CallSession) -> None: ...
    def _announce_view_change(self, session: CallSession, old: ToolView | None, new: ToolView) -> None: ...
    def _push_view(self, call_id: str, *, apply_now: bool = ...) -> Coroutine[Any, Any, None]: ...
    def _realtime_call(self, call_id: str) -> tuple[CallSession, CallRuntime]: ...
    def realtime_record(self, call_id: str, role: Literal["user", "assistant"], text: str) -> None: ...

    def _open_call(
        self,
        context: str,
        provider: str | None,
        caller_name: str | None,
        caller_number: str | None,
        direction: str,
        channel_id: str | None,
        deliver: Deliver | None,
        call_id: str | None,
        extra: dict[str, Any],
        *,
        realtime: bool = ...,
    ) -> tuple[CallSession, CallRuntime]: ...


class RealtimeCalls:
    """CallManager's realtime half (a mixin: every method runs on the CallManager)."""

    async def start_realtime_call(
        self: _Calls,
        context: str,
        *,
        provider: str | None = None,
        caller_name: str | None = None,
        caller_number: str | None = None,
        audio: AudioSpec,
        channel_id: str | None = None,
        direction: str = "inbound",
        call_id: str | None = None,
        deliver: Deliver | None = None,
        **extra: Any,
    ) -> tuple[CallSession, RealtimeSession]:
        """Start a call on the context's (or ``provider``'s) realtime provider, with ``audio`` as the driver's
        native format. ``deliver``: how the engine itself says a line on the call (a tool's question to the caller;
        the provider speaks everything else). ``CallError`` for an unknown context or a provider that is not
        realtime; a session that cannot start ends the call with the provider's reason and raises ``ProviderError``."""
        session, rt = self._open_call(
            context,
            provider,
            caller_name,
            caller_number,
            direction,
            channel_id,
            deliver,
            call_id,
            extra,
            realtime=True,
        )
        live = rt.provider_session
        if not isinstance(live, RealtimeSession):  # a RealtimeProvider whose open_session broke its contract
            await self.end_call(session.call_id, f"{rt.provider_name}: open_session did not return a realtime session")
            raise ProviderError(rt.provider_name, "open_session did not return a realtime session")
        view = self.view_for(session)
        rt.view = view
        session.shown_tools = view.names
        ctx = self._settings().contexts.get(context)
        greeting = render(ctx.greeting, prompt_values(session)) if ctx is not None and ctx.greeting else None
        setup = RealtimeSetup(
            session=session,
            instructions=self.system_prompt(session),
            view=view,
            tools=EngineGateway(self.executor, session),
            greeting=greeting,
            audio=audio,
        )
        try:
            await live.start(setup)
        except ProviderError as e:
            await self.end_call(session.call_id, str(e))
            raise
        except asyncio.CancelledError as e:  # the driver gives up connecting with its reason (the caller hung up)
            reason = str(e.args[0]) if e.args and e.args[0] else "cancelled while connecting"
            await asyncio.shield(self.end_call(session.call_id, reason))
            raise
        except Exception as e:  # a failing adapter must not take the engine down: the call ends, saying why
            reason = f"session failed to start: {type(e).__name__}: {e}"
            log.exception("realtime provider %s: %s", rt.provider_name, reason)
            await self.end_call(session.call_id, f"{rt.provider_name}: {reason}")
            raise ProviderError(rt.provider_name, reason) from e
        return session, live

    def realtime_session(self: _Calls, call_id: str) -> RealtimeSession:
        """The live realtime session of a call (``CallError`` when the call is gone or is not a realtime call)."""
        rt = self.runtime(call_id)
        if rt is None or not isinstance(rt.provider_session, RealtimeSession):
            raise CallError(f"no live realtime call {call_id!r}")
        return rt.provider_session

    async def realtime_caller_said(self: _Calls, call_id: str, text: str) -> None:
        """The provider's final transcript of a caller turn: a new turn (history, ``transcript.added``, the tier
        selector), and the view that turn computes goes to the session if it changed."""
        self.realtime_record(call_id, "user", text)
        await self._push_view(call_id)

    async def realtime_agent_said(self: _Calls, call_id: str, text: str) -> None:
        """The provider's final transcript of an assistant utterance (the greeting, an answer, a farewell): history,
        ``transcript.added``, the end of the caller's turn, and the next turn's view pushed if it changed."""
        self.realtime_record(call_id, "assistant", text)
        await self._push_view(call_id)

    def realtime_record(self: _Calls, call_id: str, role: Literal["user", "assistant"], text: str) -> None:
        """The synchronous half of the two above: record the transcript and run the turn hooks now (a driver calls
        it the moment the transcript arrives, so it comes before the tool calls of the same turn), and push the
        view later with ``realtime_push_view``."""
        session, rt = self._realtime_call(call_id)
        if role == "user" and rt.turn_open:  # the caller spoke again before an answer (barge-in): that turn is over
            self._turn_done(session)
        if role == "user":
            session.turn += 1
        session.history.add_message(role, text)
        self.bus.publish(TranscriptAdded(call_id=call_id, role=role, text=text))
        if role == "user":
            for hook in self.turn_hooks:
                hook.before_turn(session, text)
            rt.turn_open = True
        elif rt.turn_open:
            rt.turn_open = False
            self._turn_done(session)

    async def realtime_push_view(self: _Calls, call_id: str) -> None:
        """Send the call's view to its live session if it changed since the session got one (a turn boundary)."""
        await self._push_view(call_id)

    def _realtime_call(self: _Calls, call_id: str) -> tuple[CallSession, CallRuntime]:
        session = self.session(call_id)
        rt = self.runtime(call_id)
        if not session.active or rt is None:
            raise CallError(f"call {call_id} has ended")
        if not isinstance(rt.provider_session, RealtimeSession):
            raise CallError(f"call {call_id} is not a realtime call")
        return session, rt

    def _apply_now(self: _Calls, call_id: str, rt: CallRuntime) -> bool:
        """Apply now on a realtime call: the adapter redoes the response in flight with the new view."""
        coro = self._push_view(call_id, apply_now=True)
        name = f"realtime:{call_id}:apply-now"
        task = self._spawn(coro, name=name) if self._spawn is not None else asyncio.create_task(coro, name=name)
        rt.pushes.add(task)
        task.add_done_callback(rt.pushes.discard)
        return True

    async def _push_view(self: _Calls, call_id: str, *, apply_now: bool = False) -> None:
        """Send the call's current view to its realtime session when it differs from what the session has (or
        always, for apply-now); a provider that refuses says so on the bus and the call goes on."""
        rt = self.runtime(call_id)
        session = self.sessions.get(call_id)
        if rt is None or session is None or not session.active:
            return
        live = rt.provider_session
        if not isinstance(live, RealtimeSession):
            return
        async with rt.lock:  # one update at a time, in order (a turn's push and an operator's apply-now)
            view = self.view_for(session)
            if not apply_now and _same_view(rt.view, view):
                return
            self._announce_view_change(session, rt.view, view)
            old, rt.view = rt.view, view
            try:
                await live.update_tools(view, apply_now=apply_now)
            except ProviderError as e:
                rt.view = old
                self.bus.publish(EngineError(message=f"tool update not applied: {e}", call_id=call_id))
