"""The life both voice drivers share (engine.voice.call_life): the frame loop's order of endings, the first reason
to end a call wins, and a start given up when the call is stopped first."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import numpy as np

from engine.events import CallEnded, EventBus
from engine.voice.audio import AudioFrame
from engine.voice.backend import AudioBackend
from engine.voice.call_host import CallState
from engine.voice.call_life import CallLife, pump_frames, silenced
from engine.voice.pacing import Pacer


class ListFrames:
    """An async iterator of ``count`` frames that notes when it is closed (``aclose``, as a device's stream is)."""

    def __init__(self, count: int, log: list[str]) -> None:
        self.left, self.log, self.at = count, log, 0.0

    def __aiter__(self) -> ListFrames:
        return self

    async def __anext__(self) -> AudioFrame:
        if not self.left:
            raise StopAsyncIteration
        self.left -= 1
        frame = AudioFrame(np.full(320, 1000, dtype=np.int16), 16000, self.at)
        self.at += 0.02
        return frame

    async def aclose(self) -> None:
        self.log.append("iterator closed")


class ListBackend(AudioBackend):
    """``count`` caller frames, then the input ends; notes when its frame iterator is closed."""

    def __init__(self, count: int, log: list[str]) -> None:
        super().__init__(16000, 20)
        self.count, self.log = count, log

    def frames(self) -> AsyncIterator[AudioFrame]:
        return ListFrames(self.count, self.log)

    async def _output_chunk(self, frame: AudioFrame) -> None:
        pass

    def _drop_pending_output(self) -> None:
        pass

    async def _drain_output(self) -> None:
        pass

    async def _release(self) -> None:
        pass


async def test_the_last_utterance_is_flushed_before_the_input_counts_as_ended() -> None:
    # a driver waits for "input ended, every utterance answered": the flush must come before "ended"
    log: list[str] = []
    backend = ListBackend(3, log)
    pacer = Pacer(backend)

    async def take(frame: AudioFrame) -> None:
        log.append(f"frame {frame.timestamp:.2f}")

    await pump_frames(backend, pacer, take, ended=lambda: log.append("ended"), last=lambda: log.append("flush"))
    assert log == ["frame 0.00", "frame 0.02", "frame 0.04", "flush", "ended", "iterator closed"]
    assert pacer.input_done


async def test_a_loop_told_to_stop_reads_no_more_and_flushes_nothing() -> None:
    log: list[str] = []
    backend = ListBackend(5, log)
    taken: list[AudioFrame] = []

    async def take(frame: AudioFrame) -> None:
        taken.append(frame)

    await pump_frames(
        backend,
        Pacer(backend),
        take,
        ended=lambda: log.append("ended"),
        running=lambda: len(taken) < 2,
        last=lambda: log.append("flush"),
    )
    assert len(taken) == 2
    assert log == ["ended", "iterator closed"]


def test_a_silenced_frame_keeps_its_length_and_time() -> None:
    frame = AudioFrame(np.full(160, 5000, dtype=np.int16), 8000, 1.5)
    quiet = silenced(frame)
    assert (quiet.num_samples, quiet.sample_rate, quiet.timestamp) == (160, 8000, 1.5)
    assert quiet.rms_dbfs() == -120.0 and frame.rms_dbfs() > -20


async def test_the_first_reason_to_end_wins_and_the_engine_end_is_followed() -> None:
    bus = EventBus()
    states: list[CallState] = []
    life = CallLife(bus, lambda: "c1", states.append)
    sub = life.subscribe()

    class NoQuestions:
        open = False

        def on_event(self, ev: object) -> None:
            raise AssertionError(f"no question was asked: {ev}")

    follow = asyncio.create_task(life.follow(sub, NoQuestions(), lambda ev: None))
    bus.publish(CallEnded(call_id="other", reason="not this call"))
    bus.publish(CallEnded(call_id="c1", reason="hung up by the engine"))
    await asyncio.wait_for(life.done.wait(), 5)
    life.end("ended by operator")
    assert life.end_reason == "hung up by the engine"
    life.report(CallState.LISTENING)
    life.report(CallState.LISTENING)
    assert states == [CallState.LISTENING]
    sub.close()
    await asyncio.wait_for(follow, 5)


async def test_a_start_runs_unless_the_call_is_stopped_first() -> None:
    life = CallLife(EventBus(), lambda: None, None)

    async def starting() -> str:
        return "call-1"

    assert await asyncio.wait_for(life.start(starting(), "test", "start"), 5) == "call-1"
    assert not life.done.is_set()

    hold = asyncio.Event()
    seen: list[str] = []

    async def stuck() -> str:
        try:
            await hold.wait()  # a greeting that would play on
        except asyncio.CancelledError as e:
            seen.append(f"cancelled: {e.args[0]}")
            raise
        return "never"

    async def stopping() -> None:
        seen.append("stopping")

    begun = asyncio.create_task(life.start(stuck(), "test", "start", stopping))
    life.end("caller hung up")
    assert await asyncio.wait_for(begun, 5) is None
    assert seen == ["stopping", "cancelled: caller hung up"]
