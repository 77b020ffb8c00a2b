"""Admission of new calls: ``engine.max_calls`` and the drain switch (for rolling restarts).

Why it exists: an engine among several must say "no" before it is overloaded, and an operator restarting engines
one by one must be able to stop new calls on one while its live calls finish. Every call source asks the same
``Admission``: the engine's ``start_call`` (text, softphone, API) raises ``CallRefused`` (a ``CallError``), and
telephony answers Asterisk with a busy instead of a hung call. The counts come from a getter, never the engine.
A phone call is set up (answered, bridged, its media connected) before its session exists, and real Asterisk delivers
two callers within milliseconds: ``reserve()`` holds the caller's place from the moment of the decision, counted with
the live calls, until its session takes the place over (``check()`` in the reservation's tasks) or the call ends
before that, however it ends. A drain refuses a reserved call whose session has not started yet.
A call that already holds its place is not new when its AI starts again (a phone call back from a failed
transfer or from the operator): ``continuing()`` around that start lets it through a drain and a full engine.
A phone call the operator takes over stays one call: its ``CallLeg`` (``on_leg()`` around the AI's run) keeps the
call live while the operator has it and gives the AI that comes back the same call id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from engine.core.scoped import bound
from engine.sessions.session import CallError, CallSession
from engine.sessions.store import SessionStore

#: True in the task (and the tasks it starts) of a call whose AI starts again.
_CONTINUING: ContextVar[bool] = ContextVar("ava_call_continuing", default=False)


@dataclass(eq=False)
class Reservation:
    """A new call's place, held from the admission decision until its session takes it over (``claimed``)."""

    claimed: bool = False


#: The reservation of the call whose set-up runs in this task (and the tasks it starts).
_RESERVED: ContextVar[Reservation | None] = ContextVar("ava_call_reserved", default=None)


def continuing() -> AbstractContextManager[bool]:
    """Calls started inside are an admitted call going on, never refused."""
    return bound(_CONTINUING, True)


@dataclass
class CallLeg:
    """One phone call's AI conversations, seen by the call manager in the tasks of the AI's run.

    ``hold``: the AI part of ``call_id`` that ends now leaves the call live (state ``operator``, no ``call.ended``):
    the operator has the caller. The next AI part started on the leg continues ``call_id``."""

    call_id: str | None = None
    hold: bool = False


_LEG: ContextVar[CallLeg | None] = ContextVar("ava_call_leg", default=None)


def on_leg(leg: CallLeg) -> AbstractContextManager[CallLeg | None]:
    """Calls started and ended inside belong to ``leg``."""
    return bound(_LEG, leg)


def holding(call_id: str) -> bool:
    """Whether the AI part of ``call_id`` ending here leaves the call to the operator."""
    leg = _LEG.get()
    return leg is not None and leg.hold and leg.call_id == call_id


def resume_held(sessions: SessionStore) -> CallSession | None:
    """The call the leg's AI comes back to (taken out of ``sessions``, for its next part to replace), or None."""
    leg = _LEG.get()
    held = sessions.get(leg.call_id) if leg is not None and leg.call_id else None
    if leg is None or held is None or held.state != "operator":
        return None
    sessions.remove(held.call_id)
    leg.hold = False
    return held


class CallRefused(CallError):
    """A new call was refused: the engine is draining or at ``engine.max_calls`` (the message says which)."""


@dataclass(frozen=True, slots=True)
class CapacityStatus:
    live_calls: int
    max_calls: int | None
    draining: bool

    def to_dict(self) -> dict[str, int | bool | None]:
        return {"live_calls": self.live_calls, "max_calls": self.max_calls, "draining": self.draining}


class Admission:
    """Says whether a new call may start now; ``drain()`` closes the door for good (until ``resume()``)."""

    def __init__(self, max_calls: Callable[[], int | None], live_calls: Callable[[], int]) -> None:
        self._max_calls = max_calls
        self._live_calls = live_calls
        self.draining = False
        #: Calls refused so far, by reason ("draining" | "max_calls").
        self.refused: dict[str, int] = {"draining": 0, "max_calls": 0}
        #: Places held by calls being set up whose session has not started yet.
        self._reserved: set[Reservation] = set()

    @property
    def connecting(self) -> int:
        """Calls admitted whose session has not started yet (each holds a place)."""
        return sum(1 for r in self._reserved if not r.claimed)

    def _places(self) -> int:
        return self._live_calls() + self.connecting

    def refusal(self) -> str | None:
        """Why a new call may not start now (counted as refused), or None when it may."""
        if self.draining:
            self.refused["draining"] += 1
            return "the engine is draining (ava-engine drain): it takes no new calls while its live calls finish"
        limit = self._max_calls()
        live, connecting = self._live_calls(), self.connecting
        if limit is not None and live + connecting >= limit:
            self.refused["max_calls"] += 1
            also = f" and {connecting} being connected" if connecting else ""
            return f"the engine is at capacity: {live} live call(s){also}, engine.max_calls is {limit}"
        return None

    def check(self) -> None:
        """Raise ``CallRefused`` when a new call may not start now (a ``continuing()`` one always may). In the tasks
        of a ``reserve()`` the call's place is already held: only a drain refuses it, and its session, started
        next, takes the place over."""
        if _CONTINUING.get():
            return
        held = _RESERVED.get()
        if held is not None and not held.claimed:
            if self.draining:
                self.refused["draining"] += 1
                raise CallRefused(
                    "call refused: the engine started draining (ava-engine drain) while the call was being connected"
                )
            held.claimed = True
            return
        why = self.refusal()
        if why is not None:
            raise CallRefused(f"call refused: {why}")

    @contextmanager
    def reserve(self) -> Iterator[Reservation]:
        """Admit a new call and hold its place while it is set up: ``CallRefused`` at once when it may not start,
        else the place counts with the live calls until the call's session takes it over (``check()`` inside) or
        the block ends, however it ends (an error, a cancellation, a caller who left first)."""
        why = self.refusal()
        if why is not None:
            raise CallRefused(f"call refused: {why}")
        held = Reservation()
        self._reserved.add(held)
        try:
            with bound(_RESERVED, held):
                yield held
        finally:
            self._reserved.discard(held)

    def drain(self) -> CapacityStatus:
        self.draining = True
        return self.status()

    def resume(self) -> CapacityStatus:
        self.draining = False
        return self.status()

    def status(self) -> CapacityStatus:
        """``live_calls`` counts every place taken: live calls and calls being connected."""
        return CapacityStatus(self._places(), self._max_calls(), self.draining)
