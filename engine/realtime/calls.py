"""The call lifecycle for speech-to-speech providers: start a live session, record what each side said, push views.

Why it exists: a realtime provider (OpenAI Realtime, Gemini Live, Deepgram Voice Agent, ElevenLabs Agents) runs the
turns itself — it hears the caller, decides when a turn ends, answers with audio and calls tools through the
gateway it was given. The engine still owns everything around those turns: the call record and its events, the
tool view (allowlist ∩ tier ∩ operator switches) and when it changes, the history and transcript, the tier
selector's hooks. ``RealtimeCalls`` is a part the ``CallManager`` holds (given the manager's lifecycle as the
narrow ``CallCore``), so the text path in engine/calls/manager.py stays readable; the manager's facade names its
methods as the voice driver (engine/realtime/call.py) calls them when the session's events arrive:

- ``start`` (``calls.start_realtime_call``) creates the call, shows it its view, and awaits ``session.start(setup)``;
- ``caller_said`` / ``agent_said`` record final transcripts, run the turn hooks and push a changed view to the live
  session for the next turn (``record`` + ``push_view``: the same in two halves, so a driver records at once and
  pushes from its own task);
- ``apply_now`` (the manager's ``restart_turn`` on a realtime call) pushes the view with ``apply_now=True`` in the
  background.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from engine.calls.runtime import CallOpening, EngineGateway
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


class CallCore(Protocol):
    """What the realtime part uses of the call manager's lifecycle (the manager satisfies it)."""

    def runtime(self, call_id: str) -> CallRuntime | None: ...
    def live_session(self, call_id: str) -> CallSession | None: ...
    def session(self, call_id: str) -> CallSession: ...
    def view_for(self, session: CallSession) -> ToolView: ...
    def system_prompt(self, session: CallSession) -> str: ...
    def end_call(self, call_id: str, reason: str = ...) -> Awaitable[None]: ...
    def turn_done(self, session: CallSession) -> None: ...
    def announce_view_change(self, session: CallSession, old: ToolView | None, new: ToolView) -> None: ...
    def open_call(self, opening: CallOpening, *, realtime: bool = ...) -> tuple[CallSession, CallRuntime]: ...


class RealtimeCalls:
    """The call manager's realtime part: calls on speech-to-speech providers, driven by the session's events."""

    def __init__(
        self,
        calls: CallCore,
        *,
        settings: Callable[[], Settings],
        bus: EventBus,
        executor: ToolExecutor,
        turn_hooks: Sequence[TurnHooks],
        spawn: Spawn | None = None,
    ) -> None:
        self._calls = calls
        self._settings = settings
        self._bus = bus
        self._executor = executor
        #: The manager's own hook list (a hook the wiring adds later is seen at the next turn).
        self._turn_hooks = turn_hooks
        self._spawn = spawn

    async def start(
        self,
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
        opening = CallOpening(
            context, provider, caller_name, caller_number, direction, channel_id, deliver, call_id, extra
        )
        session, rt = self._calls.open_call(opening, realtime=True)
        live = rt.provider_session
        if not isinstance(live, RealtimeSession):  # a RealtimeProvider whose open_session broke its contract
            await self._calls.end_call(
                session.call_id, f"{rt.provider_name}: open_session did not return a realtime session"
            )
            raise ProviderError(rt.provider_name, "open_session did not return a realtime session")
        view = self._calls.view_for(session)
        rt.view = view
        session.shown_tools = view.names
        ctx = self._settings().contexts.get(context)
        greeting = render(ctx.greeting, prompt_values(session)) if ctx is not None and ctx.greeting else None
        setup = RealtimeSetup(
            session=session,
            instructions=self._calls.system_prompt(session),
            view=view,
            tools=EngineGateway(self._executor, session),
            greeting=greeting,
            audio=audio,
        )
        try:
            await live.start(setup)
        except ProviderError as e:
            await self._calls.end_call(session.call_id, str(e))
            raise
        except asyncio.CancelledError as e:  # the driver gives up connecting with its reason (the caller hung up)
            reason = str(e.args[0]) if e.args and e.args[0] else "cancelled while connecting"
            await asyncio.shield(self._calls.end_call(session.call_id, reason))
            raise
        except Exception as e:  # a failing adapter must not take the engine down: the call ends, saying why
            reason = f"session failed to start: {type(e).__name__}: {e}"
            log.exception("realtime provider %s: %s", rt.provider_name, reason)
            await self._calls.end_call(session.call_id, f"{rt.provider_name}: {reason}")
            raise ProviderError(rt.provider_name, reason) from e
        return session, live

    def session(self, call_id: str) -> RealtimeSession:
        """The live realtime session of a call (``CallError`` when the call is gone or is not a realtime call)."""
        rt = self._calls.runtime(call_id)
        if rt is None or not isinstance(rt.provider_session, RealtimeSession):
            raise CallError(f"no live realtime call {call_id!r}")
        return rt.provider_session

    async def caller_said(self, call_id: str, text: str) -> None:
        """The provider's final transcript of a caller turn: a new turn (history, ``transcript.added``, the tier
        selector), and the view that turn computes goes to the session if it changed."""
        self.record(call_id, "user", text)
        await self.push_view(call_id)

    async def agent_said(self, call_id: str, text: str) -> None:
        """The provider's final transcript of an assistant utterance (the greeting, an answer, a farewell): history,
        ``transcript.added``, the end of the caller's turn, and the next turn's view pushed if it changed."""
        self.record(call_id, "assistant", text)
        await self.push_view(call_id)

    def record(self, call_id: str, role: Literal["user", "assistant"], text: str) -> None:
        """The synchronous half of the two above: record the transcript and run the turn hooks now (a driver calls
        it the moment the transcript arrives, so it comes before the tool calls of the same turn), and push the
        view later with ``push_view``."""
        session, rt = self._live_call(call_id)
        if role == "user" and rt.turn_open:  # the caller spoke again before an answer (barge-in): that turn is over
            self._calls.turn_done(session)
        if role == "user":
            session.turn += 1
        session.history.add_message(role, text)
        self._bus.publish(TranscriptAdded(call_id=call_id, role=role, text=text))
        if role == "user":
            for hook in self._turn_hooks:
                hook.before_turn(session, text)
            rt.turn_open = True
        elif rt.turn_open:
            rt.turn_open = False
            self._calls.turn_done(session)

    def _live_call(self, call_id: str) -> tuple[CallSession, CallRuntime]:
        session = self._calls.session(call_id)
        rt = self._calls.runtime(call_id)
        if not session.active or rt is None:
            raise CallError(f"call {call_id} has ended")
        if not isinstance(rt.provider_session, RealtimeSession):
            raise CallError(f"call {call_id} is not a realtime call")
        return session, rt

    def apply_now(self, call_id: str, rt: CallRuntime) -> bool:
        """Apply now on a realtime call: the adapter redoes the response in flight with the new view."""
        coro = self.push_view(call_id, apply_now=True)
        name = f"realtime:{call_id}:apply-now"
        task = self._spawn(coro, name=name) if self._spawn is not None else asyncio.create_task(coro, name=name)
        rt.pushes.add(task)
        task.add_done_callback(rt.pushes.discard)
        return True

    async def push_view(self, call_id: str, *, apply_now: bool = False) -> None:
        """Send the call's current view to its realtime session when it differs from what the session has (a turn
        boundary), or always for apply-now; a provider that refuses says so on the bus and the call goes on."""
        rt = self._calls.runtime(call_id)
        session = self._calls.live_session(call_id)
        if rt is None or session is None or not session.active:
            return
        live = rt.provider_session
        if not isinstance(live, RealtimeSession):
            return
        async with rt.lock:  # one update at a time, in order (a turn's push and an operator's apply-now)
            view = self._calls.view_for(session)
            if not apply_now and _same_view(rt.view, view):
                return
            self._calls.announce_view_change(session, rt.view, view)
            old, rt.view = rt.view, view
            try:
                await live.update_tools(view, apply_now=apply_now)
            except ProviderError as e:
                rt.view = old
                self._bus.publish(EngineError(message=f"tool update not applied: {e}", call_id=call_id))
