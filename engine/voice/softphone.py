"""The operator's softphone: one local mic/speaker call at a time, driven by the console (or any UI).

The engine owns it (``engine.softphone()``) and hands it the voice calls' host made of parts
(``engine.realtime.voice_host.VoiceParts``), not itself; it opens the sound devices (``DeviceBackend``; PortAudio
through sounddevice), puts a voice call around a context — a ``VoiceCall`` (local STT → provider → TTS), or a
``RealtimeVoiceCall`` when the context's provider is speech-to-speech (no push-to-talk there) — and takes the
commands a UI sends: ``start(context, input_device, output_device)`` / ``end()``, ``mute(bool)``, push-to-talk
``press()`` / ``release()``. What it
tells goes out on the engine's event bus like everything else: ``softphone.state`` (state, mute, push-to-talk)
and ``softphone.level`` (the input level and the agent's output level in dBFS, at most every
``level_interval_s``); the live transcript is
``transcript.added``, announcements ``announcement.played``. Its voice call runs as a named engine task.

Without PortAudio, or without a usable device, ``start`` raises ``AudioUnavailable`` with a plain message saying
what is missing and how to fix it, and changes nothing: text calls (``engine.start_call`` / ``user_said``) keep
working. Echo: with loudspeakers the mic hears the agent and barges in on it; use a headset, or set
``options.echo_guard_ms`` on a pipeline provider (ignores barge-in during the first N ms of each answer).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from engine.core.tasks import Spawn
from engine.events import SoftphoneLevel, SoftphoneStateChanged
from engine.realtime.call import RealtimeVoiceCall
from engine.realtime.host import RealtimeHost, is_realtime
from engine.voice.backend import AudioBackend, AudioUnavailable
from engine.voice.device_backend import DeviceSpec
from engine.voice.pipeline import CallState, VoiceCall, resolve_voice
from engine.voice.stt import Recognizer

BackendFactory = Callable[[DeviceSpec, DeviceSpec, int, int], AudioBackend]
IDLE = "idle"


def device_backend(
    input_device: DeviceSpec, output_device: DeviceSpec, sample_rate: int, frame_ms: int
) -> AudioBackend:
    """The default backend: the sound card (raises AudioUnavailable with the fix when it cannot)."""
    from engine.voice.device_backend import DeviceBackend

    return DeviceBackend(input_device, output_device, sample_rate=sample_rate, frame_ms=frame_ms)


class Softphone:
    def __init__(
        self,
        host: RealtimeHost,
        *,
        spawn: Spawn | None = None,
        backend_factory: BackendFactory = device_backend,
        recognizer: Recognizer | None = None,
        level_interval_s: float = 0.1,
        on_state: Callable[[str], None] | None = None,
        on_level: Callable[[float], None] | None = None,
    ) -> None:
        self.host = host
        self._spawn = spawn
        self.backend_factory = backend_factory
        self.level_interval_s = level_interval_s
        self.on_state, self.on_level = on_state, on_level
        self.state: str = IDLE
        self.input_level_dbfs = -120.0
        #: The loudest chunk the agent played since the last level event (dBFS).
        self.agent_level_dbfs = -120.0
        self.call: VoiceCall | RealtimeVoiceCall | None = None
        self._recognizer = recognizer
        self._task: asyncio.Task[str] | None = None
        self._muted = False
        self._last_level = 0.0

    # ------------------------------------------------------------------------------------------------ commands

    @property
    def active(self) -> bool:
        return self._task is not None and not self._task.done()

    @property
    def call_id(self) -> str | None:
        return self.call.call_id if self.call is not None else None

    @property
    def muted(self) -> bool:
        return self._muted

    @property
    def push_to_talk(self) -> bool:
        return self.call is not None and self.call.options.push_to_talk

    async def start(
        self,
        context: str,
        input_device: DeviceSpec = None,
        output_device: DeviceSpec = None,
        *,
        caller_name: str | None = "Operator",
        provider: str | None = None,
    ) -> str:
        """Open the devices and start a voice call of ``context``; returns the call id once the call exists."""
        if self.active:
            raise RuntimeError(f"the softphone already has a call ({self.call_id}); end it first")
        options, _ = resolve_voice(self.host, context, provider)  # CallError for an unknown context/provider
        backend = self.backend_factory(input_device, output_device, options.sample_rate, options.frame_ms)
        backend.on_output_level = self._agent_level
        try:
            call: VoiceCall | RealtimeVoiceCall
            if is_realtime(self.host, context, provider):  # the provider hears and speaks itself
                call = RealtimeVoiceCall(
                    self.host,
                    backend,
                    context,
                    provider=provider,
                    caller_name=caller_name,
                    options=options,
                    on_state=self._call_state,
                    on_level=self._level,
                )
            else:
                if self._recognizer is None:
                    self._recognizer = await asyncio.to_thread(Recognizer, user_dictionary=options.dictionary)
                call = VoiceCall(
                    self.host,
                    backend,
                    context,
                    provider=provider,
                    caller_name=caller_name,
                    recognizer=self._recognizer,
                    on_state=self._call_state,
                    on_level=self._level,
                )
        except BaseException:
            await backend.close()  # the devices were opened: release them
            raise
        call.mute(self._muted)
        self.call = call
        name = f"softphone:{context}"
        self._task = self._spawn(call.run(), name=name) if self._spawn else asyncio.create_task(call.run(), name=name)
        started = asyncio.create_task(call.started.wait(), name="softphone:started")
        await asyncio.wait([started, self._task], return_when="FIRST_COMPLETED")
        started.cancel()
        if self._task.done() and not call.started.is_set():
            self._set_state(IDLE)
            self._task.result()  # raises what went wrong
            raise AudioUnavailable("the voice call ended before it started")
        assert call.call_id is not None
        return call.call_id

    async def end(self, reason: str = "ended by operator") -> None:
        """Hang up (the engine ends the call) and close the devices; a no-op without a call."""
        task, call = self._task, self.call
        if task is None or call is None:
            return
        call.stop(reason)
        with contextlib.suppress(asyncio.CancelledError):
            await task
        self._task = None
        self._set_state(IDLE)

    async def wait_ended(self) -> str | None:
        """Wait until the current call ends (the caller or agent hung up); returns its end reason."""
        if self._task is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        return self.call.end_reason if self.call is not None else None

    def mute(self, muted: bool) -> None:
        self._muted = muted
        if self.call is not None:
            self.call.mute(muted)
        self._publish("state")

    def press(self) -> None:
        """Push-to-talk key down (talking over the agent cuts it off)."""
        self._require_call().ptt_press()

    def release(self) -> None:
        """Push-to-talk key up: what was said becomes one utterance."""
        self._require_call().ptt_release()

    def _require_call(self) -> VoiceCall | RealtimeVoiceCall:
        if self.call is None or not self.active:
            raise RuntimeError("the softphone has no call; start one first")
        return self.call

    # ------------------------------------------------------------------------------------------------ events

    def _publish(self, kind: str) -> None:
        if kind == "level":
            agent, self.agent_level_dbfs = self.agent_level_dbfs, -120.0
            self.host.bus.publish(
                SoftphoneLevel(level_dbfs=self.input_level_dbfs, agent_dbfs=agent, call_id=self.call_id)
            )
            return
        self.host.bus.publish(
            SoftphoneStateChanged(
                state=self.state,
                muted=self._muted,
                push_to_talk=self.push_to_talk,
                call_id=self.call_id,
                level_dbfs=self.input_level_dbfs,
            )
        )

    def _set_state(self, state: str) -> None:
        if state == self.state:
            return
        self.state = state
        if self.on_state is not None:
            self.on_state(state)
        self._publish("state")

    def _call_state(self, state: CallState) -> None:
        self._set_state(state.value)

    def _agent_level(self, dbfs: float) -> None:
        self.agent_level_dbfs = max(self.agent_level_dbfs, dbfs)

    def _level(self, dbfs: float) -> None:
        self.input_level_dbfs = dbfs
        now = time.monotonic()
        if now - self._last_level < self.level_interval_s:
            return
        self._last_level = now
        if self.on_level is not None:
            self.on_level(dbfs)
        self._publish("level")
