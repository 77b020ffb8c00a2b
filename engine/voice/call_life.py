"""The life of a voice call as both drivers live it: started unless stopped, run to its first end, the bus
followed, its state reported, closed; and the one loop over the caller's frames.

Why it exists: the cascaded driver (``engine.voice.pipeline.VoiceCall``) and the realtime one
(``engine.realtime.call.RealtimeVoiceCall``) differ in who hears and who speaks, not in how a call ends (the first
reason given wins), which bus events it follows, how its ``CallState`` reaches the speaking timeline and
``on_state``, or how it closes. ``CallLife`` is that one implementation, held by each driver; ``pump_frames`` reads
the backend's frames as the ``Pacer`` allows for both, and ``OfLife`` gives each driver the life's ``state``,
``end_reason``, ``on_state`` and ``started`` as its own attributes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Collection, Coroutine
from typing import Any, Generic, Protocol, TypeVar, overload

import numpy as np

from engine.events import (
    AnnouncementRequested,
    CallEnded,
    ElicitationRequested,
    ElicitationResolved,
    ElicitationWaiting,
    EventBus,
    Subscription,
)
from engine.sessions.session import CallSession
from engine.voice.audio import AudioFrame
from engine.voice.backend import AudioBackend
from engine.voice.call_host import CallState
from engine.voice.pacing import Pacer
from engine.voice.speaking import SpeakingTap

T = TypeVar("T")

#: What the bus says about a tool's question to the caller.
Asked = ElicitationRequested | ElicitationWaiting | ElicitationResolved


class Questions(Protocol):
    """A driver's questions to the caller (``CallerQuestions``, ``RealtimeQuestions``), fed from the bus."""

    @property
    def open(self) -> Collection[str] | bool: ...

    def on_event(self, ev: Asked) -> None: ...


class OfLife(Generic[T]):
    """A driver's attribute that is its ``CallLife``'s of the same name (read-only unless ``writable``): both
    drivers name it once as a class attribute instead of restating a property for it."""

    def __init__(self, *, writable: bool = False) -> None:
        self.writable = writable
        self.name = ""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    @overload
    def __get__(self, driver: None, owner: type) -> OfLife[T]: ...

    @overload
    def __get__(self, driver: LifeHolder, owner: type) -> T: ...

    def __get__(self, driver: LifeHolder | None, owner: type) -> OfLife[T] | T:
        if driver is None:
            return self
        value: T = getattr(driver.life, self.name)
        return value

    def __set__(self, driver: LifeHolder, value: T) -> None:
        if not self.writable:
            raise AttributeError(f"{self.name} is the call life's; it cannot be set on the driver")
        setattr(driver.life, self.name, value)


class LifeHolder(Protocol):
    """A voice driver: it holds its call's ``CallLife``."""

    @property
    def life(self) -> CallLife: ...


class CallLife:
    def __init__(
        self, bus: EventBus, call_id: Callable[[], str | None], on_state: Callable[[CallState], None] | None
    ) -> None:
        self.bus = bus
        self.call_id = call_id  # None until the call exists
        self.on_state = on_state
        self.speaking = SpeakingTap(bus)  # the console's speaking timeline
        self.state = CallState.STARTING
        self.end_reason: str | None = None
        #: Set once the call exists (its id is known).
        self.started = asyncio.Event()
        #: Set when the call is to end: by the engine, the operator, the caller, or a failing part.
        self.done = asyncio.Event()
        #: The call is being closed (its state is ``ended`` from now on).
        self.closing = False

    def end(self, reason: str | None) -> None:
        """End the call; the first reason given is the one it ends with."""
        self.end_reason = self.end_reason or reason
        self.done.set()

    def report(self, state: CallState) -> None:
        """The call's state is ``state`` now: told to the timeline and ``on_state`` when it changed."""
        if state != self.state:
            self.speaking.state(self.call_id(), state)
            self.state = state
            if self.on_state is not None:
                self.on_state(state)

    async def start(
        self,
        starting: Coroutine[Any, Any, T],
        name: str,
        what: str,
        stopping: Callable[[], Awaitable[None]] | None = None,
    ) -> T | None:
        """Run ``starting`` (the call's start) unless the call is ended first: then ``stopping`` runs, the start is
        cancelled with the call's end reason (the engine ends the call with it) and the result is None."""
        task = asyncio.create_task(starting, name=f"{name}:{what}")
        stopped = asyncio.create_task(self.done.wait(), name=f"{name}:stopped")
        try:
            await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            if not task.done():
                if stopping is not None:
                    await stopping()
                task.cancel(self.end_reason)
            await asyncio.gather(task, stopped, return_exceptions=True)
        return None if task.cancelled() else task.result()

    async def until_end(self, finished: Coroutine[Any, Any, None], name: str, what: str) -> None:
        """Wait until ``finished`` returns (the call ran its course) or the call is ended."""
        waits = [
            asyncio.create_task(finished, name=f"{name}:{what}"),
            asyncio.create_task(self.done.wait(), name=f"{name}:done"),
        ]
        try:
            await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for w in waits:
                w.cancel()

    def subscribe(self) -> Subscription:
        """The bus events ``follow`` takes: questions to the caller, announcements and the call's end."""
        asked = {ElicitationRequested.type, ElicitationWaiting.type, ElicitationResolved.type}
        return self.bus.subscribe(types={AnnouncementRequested.type, CallEnded.type, *asked})

    async def follow(
        self,
        sub: Subscription,
        questions: Questions,
        announce: Callable[[AnnouncementRequested], object],
        asked: Callable[[], None] | None = None,
    ) -> None:
        """This call's events: questions to ``questions`` (then ``asked``), announcements to ``announce`` unless a
        question is open (they would talk over it), and the engine's end of the call."""
        async for ev in sub:
            if (cid := self.call_id()) is None or getattr(ev, "call_id", None) != cid:
                continue
            if isinstance(ev, Asked):
                questions.on_event(ev)
                if asked is not None:
                    asked()
            elif isinstance(ev, AnnouncementRequested):
                if not questions.open:
                    announce(ev)
            elif isinstance(ev, CallEnded):
                self.end(ev.reason)

    async def close(
        self,
        session: CallSession | None,
        end_call: Callable[[str, str], Awaitable[None]],
        sub: Subscription,
        backend: AudioBackend | None,
    ) -> None:
        """The call's last steps: ``end_call`` when the session still runs (with the call's end reason, else "caller
        finished"), the session's reason as the call's when it had none, the bus let go, ``backend`` closed."""
        if session is not None:
            if session.active:
                await end_call(session.call_id, self.end_reason or "caller finished")
            if self.end_reason is None:
                self.end_reason = session.end_reason
        sub.close()
        if backend is not None:
            await backend.close()


async def pump_frames(
    backend: AudioBackend,
    pacer: Pacer,
    take: Callable[[AudioFrame], Awaitable[None]],
    *,
    ended: Callable[[], None],
    running: Callable[[], bool] | None = None,
    last: Callable[[], None] | None = None,
) -> None:
    """Hand the backend's frames to ``take`` as the pacer allows, until they run out (then ``last``, unless
    ``running`` says no more), ``running`` says stop, or the task is cancelled. Whichever way it ends, the pacer
    hears the input is over, ``ended`` is called, and the frames' iterator is closed."""
    frames = backend.frames()
    try:
        while running is None or running():  # (no call per frame when there is no condition)
            await pacer.before_input()
            try:
                frame = await anext(frames)
            except StopAsyncIteration:
                break
            pacer.changed()
            await take(frame)
        if last is not None and (running is None or running()):
            last()
    finally:
        pacer.end_of_input()
        ended()
        closer = getattr(frames, "aclose", None)
        if closer is not None:
            with contextlib.suppress(RuntimeError):
                await closer()


def silenced(frame: AudioFrame) -> AudioFrame:
    """``frame`` as silence of the same length and time (a muted caller, a frame kept from the provider)."""
    return AudioFrame(np.zeros(frame.num_samples, dtype=np.int16), frame.sample_rate, frame.timestamp)
