"""Where each turn's time went: one ``turn.timings`` event per turn, for the console's latency waterfall.

Why a book of its own: a turn's stages are seen by different parts — the voice drivers see endpointing, speech
recognition, the first audio and the end of playout; the call manager's turn hooks see the model's span; the
executor's ``tool.completed`` events carry each tool call's server and duration. The book is one of the engine's
turn hooks, takes the voice drivers' stamps (``time.perf_counter``, taken on the hot path and nothing more) and
reads the tool events from its own bus subscription, drained synchronously at each hook (no task, no await).
It publishes when the turn is complete: at ``after_turn`` on a text call, once the answer has played on a voice
call (or when the next turn starts or the call ends, whichever is first).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from engine.events import CallEnded, EventBus, Subscription, ToolCompleted, TurnStage, TurnTimings
from engine.sessions.session import CallSession

__all__ = ["TurnTimingBook"]


@dataclass
class _Turn:
    """One turn's stamps; made by the voice side's ``heard`` (or by ``before_turn`` on a text call)."""

    start: float  # the turn's zero: the caller stopped talking (voice) or the text arrived
    endpointed: float | None = None
    transcribed: float | None = None
    #: A realtime model hears the audio itself: no local STT, its span runs from the caller's stop to first audio.
    realtime: bool = False
    voiced: bool = False  # the answer is spoken (a voice driver's ``heard`` opened the turn)
    opened: bool = False  # ``before_turn`` ran: the engine took this as a turn
    turn: int = 0
    tier: str = ""
    budget_ms: int = 0
    model_start: float | None = None
    reply: float | None = None  # the model's answer is ready (text); None while it thinks
    first_audio: float | None = None
    played: float | None = None
    cut: bool = False
    tools: list[TurnStage] = field(default_factory=list)


class TurnTimingBook:
    """Turn hook and stamp sink: ``heard``/``first_audio``/``played`` from voice drivers, hooks from the calls."""

    def __init__(
        self, bus: EventBus, budget_ms: Callable[[str], int], clock: Callable[[], float] = time.perf_counter
    ) -> None:
        self.bus = bus
        self.budget_ms = budget_ms
        self.clock = clock
        #: Held only while a turn is open, so a bus with no call in progress builds no tool events for the book.
        self._sub: Subscription | None = None
        self._open: dict[str, _Turn] = {}

    # ------------------------------------------------------------------------------------------ voice stamps

    def heard(
        self,
        call_id: str,
        speech_end: float,
        endpointed: float | None = None,
        transcribed: float | None = None,
        *,
        realtime: bool = False,
    ) -> None:
        """The caller's utterance ended at ``speech_end``: a new turn starts there (the open one is over). Its
        answer is spoken, so the turn is published once the audio has played."""
        if call_id in self._open:
            self._publish(call_id)
        self._listen()
        self._open[call_id] = _Turn(speech_end, endpointed, transcribed, realtime, voiced=True)

    def first_audio(self, call_id: str, at: float) -> None:
        t = self._open.get(call_id)
        if t is not None and t.first_audio is None:
            t.first_audio = at

    def cut(self, call_id: str) -> None:
        """Barge-in: the answer's playout was cut off."""
        t = self._open.get(call_id)
        if t is not None and t.first_audio is not None:
            t.cut = True

    def played(self, call_id: str, at: float) -> None:
        """The answer's audio finished; the turn is complete once its reply is known."""
        t = self._open.get(call_id)
        if t is None or t.first_audio is None or t.played is not None:
            return
        t.played = at
        if t.reply is not None:
            self._publish(call_id)

    # ------------------------------------------------------------------------------------------ turn hooks

    def before_turn(self, session: CallSession, text: str) -> None:
        self._drain()
        now, call_id = self.clock(), session.call_id
        t = self._open.get(call_id)
        if t is None or t.opened:
            if t is not None:
                self._publish(call_id)
            self._listen()
            t = self._open[call_id] = _Turn(now)
        t.opened, t.turn, t.tier, t.budget_ms = True, session.turn, session.tier, self.budget_ms(session.tier)
        t.model_start = t.start if t.realtime else now

    def after_turn(self, session: CallSession) -> None:
        self._drain()
        t = self._open.get(session.call_id)
        if t is None or not t.opened or t.reply is not None:
            return
        t.reply = self.clock()
        if not t.voiced or t.played is not None:
            self._publish(session.call_id)

    # ------------------------------------------------------------------------------------------ plumbing

    def _listen(self) -> None:
        if self._sub is None:
            self._sub = self.bus.subscribe(types={ToolCompleted.type, CallEnded.type})

    def _drain(self) -> None:
        if self._sub is None:
            return
        events = self._sub.drain()
        if not events:
            return
        offset = self.clock() - time.time()  # the events' wall-clock ts onto the perf_counter stamps
        for ev in events:
            if isinstance(ev, ToolCompleted):
                t = self._open.get(ev.call_id)
                if t is None or ev.is_probe:
                    continue
                end = ev.ts + offset
                t.tools.append(
                    TurnStage(
                        name="tool",
                        start_ms=_ms(end - ev.latency_ms / 1000 - t.start),
                        duration_ms=ev.latency_ms,
                        label=ev.exposed_name,
                        server=ev.server,
                        status=ev.status,
                    )
                )
            elif isinstance(ev, CallEnded):
                if ev.call_id in self._open:
                    self._publish(ev.call_id)

    def flush(self, call_id: str) -> None:
        """Publish what the call's open turn has (the call is ending)."""
        self._drain()
        if call_id in self._open:
            self._publish(call_id)

    def _publish(self, call_id: str) -> None:
        t = self._open.pop(call_id)
        if not self._open and self._sub is not None:  # no turn in progress: stop receiving (see ``_sub``)
            self._sub.close()
            self._sub = None
        if not t.opened:  # heard, but nothing was said (an empty transcript): no turn
            return
        now = self.clock()
        end = t.first_audio or t.reply or now
        self.bus.publish(
            TurnTimings(
                call_id=call_id,
                turn=t.turn,
                tier=t.tier,
                budget_ms=t.budget_ms,
                latency_ms=_ms(end - t.start),
                stages=stages_of(t),
                started_at=time.time() - (now - t.start),
            )
        )


def stages_of(t: _Turn) -> tuple[TurnStage, ...]:
    """The turn's stages in order, each from the turn's start; a stage not measured is left out."""
    out: list[TurnStage] = []

    def add(name: str, a: float | None, b: float | None, status: str = "") -> None:
        if a is not None and b is not None and b >= a:
            out.append(TurnStage(name=name, start_ms=_ms(a - t.start), duration_ms=_ms(b - a), status=status))

    add("endpointing", t.start, t.endpointed)
    add("stt", t.endpointed, t.transcribed)
    # model to first token (text and pipeline calls), or to first audio (a realtime model speaks itself)
    add("model", t.model_start, t.first_audio if t.realtime else t.reply)
    out.extend(sorted(t.tools, key=lambda s: s.start_ms))
    if not t.realtime:
        add("tts", t.reply, t.first_audio)
    add("playout", t.first_audio, t.played, "cut" if t.cut else "")
    return tuple(out)


def _ms(seconds: float) -> float:
    return round(seconds * 1000, 1)
