"""Pilot tests of the softphone's voice side in the console, by keyboard alone: a voice call heard through the
speech pipeline (listening by itself, and push-to-talk), mute, hang-up, the audio devices dialog (choose, save),
and what the operator sees without PortAudio or without devices (text calls keep working). One test runs the
real sound-card backend on a private PulseAudio null sink."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from textual.widgets import Checkbox, Select, Static

from console.app import AvaConsole
from console.screens.audio_devices import AudioDevicesScreen
from engine.voice import device_backend as devmod
from engine.voice.backend import AudioBackend, AudioUnavailable
from engine.voice.device_backend import DeviceInfo, DeviceSpec
from engine.voice.tts import Synthesizer
from tests.console.helpers import record_notifications
from tests.fixtures.audio_backends import FeedBackend


def _speech(text: str) -> np.ndarray:
    """``text`` spoken by espeak, with the silence around it that ends an utterance."""
    samples = Synthesizer(sample_rate=16000).synthesize_blocking(text).samples
    pad = np.zeros(16000, dtype=np.int16)
    return np.concatenate([pad[:4800], samples, pad])


class Backends:
    """A backend factory that records what it was asked for and hands out ``FeedBackend`` microphones."""

    def __init__(self) -> None:
        self.made: list[FeedBackend] = []
        self.devices: list[tuple[DeviceSpec, DeviceSpec]] = []

    def __call__(self, input_device: DeviceSpec, output_device: DeviceSpec, rate: int, frame_ms: int) -> AudioBackend:
        self.devices.append((input_device, output_device))
        backend = FeedBackend(rate, frame_ms)
        self.made.append(backend)
        return backend


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _append(path: Path, text: str) -> None:
    path.write_text(_text(path) + text, encoding="utf-8")


def _slot(app: AvaConsole) -> str:
    return str(app.screen.query_one("#voice-slot", Static).render())


async def _voice_call(pilot: Any, app: AvaConsole, wait: Callable[..., Any]) -> str:
    await wait(pilot, lambda: app.engine_running)
    await pilot.press("v")
    await wait(pilot, lambda: app.phone is not None and app.phone.call_id is not None, within=30)
    await wait(pilot, lambda: app.voice.state == "listening", within=15)
    assert app.phone is not None and app.phone.call_id is not None
    return app.phone.call_id


async def test_voice_call_heard_by_itself_mute_and_hang_up(config_path: Path, wait) -> None:
    backends = Backends()
    app = AvaConsole(config_path, audio_backend_factory=backends)
    async with app.run_test(size=(120, 40)) as pilot:
        call_id = await _voice_call(pilot, app, wait)
        assert app.selected_call == call_id and app.focused is not None and app.focused.id == "calls"
        assert "listening" in _slot(app)
        mic = backends.made[0]
        assert mic.played  # the greeting went to the speaker
        mic.feed(_speech("hello"))
        await wait(pilot, lambda: "hello" in [t for _, r, t in app.state.transcript(call_id) if r == "user"])
        await wait(pilot, lambda: "Hello! I'm listening." in [t for _, _, t in app.state.transcript(call_id)])
        transcript = app.screen.query_one("#transcript")
        await wait(pilot, lambda: any("hello" in str(line.text) for line in transcript.lines))  # type: ignore[attr-defined]
        await pilot.press("m")
        assert app.phone is not None and app.phone.muted and "MUTE" in _slot(app)
        heard = len(app.state.transcript(call_id))
        mic.feed(_speech("hello"))
        await wait(pilot, lambda: mic.mic.empty())
        await pilot.pause(0.3)
        assert len(app.state.transcript(call_id)) == heard  # muted: nothing was heard
        await pilot.press("m")
        assert not app.phone.muted and "MUTE" not in _slot(app)
        await pilot.press("e")
        await wait(pilot, lambda: call_id not in app.state.calls and app.voice.state == "idle")
        assert not app.phone.active and mic._closed
        assert "voice: off" in _slot(app)


async def test_push_to_talk_is_a_toggle_and_goodbye_hangs_up(config_path: Path, wait) -> None:
    _append(config_path, "softphone:\n  push_to_talk: true\n")
    backends = Backends()
    app = AvaConsole(config_path, audio_backend_factory=backends)
    async with app.run_test(size=(120, 40)) as pilot:
        call_id = await _voice_call(pilot, app, wait)
        assert "ptt" in _slot(app)
        mic = backends.made[0]
        mic.feed(_speech("hello"))  # not heard: the key is up
        await wait(pilot, lambda: mic.mic.empty())
        await pilot.pause(0.3)
        assert [t for _, r, t in app.state.transcript(call_id) if r == "user"] == []
        await pilot.press("space")
        assert app.voice.talking and "TALK" in _slot(app)
        mic.feed(_speech("goodbye"))
        await wait(pilot, lambda: mic.mic.empty())
        await pilot.press("space")
        assert not app.voice.talking
        # the scripted agent hangs up: the farewell plays, then the call ends and the softphone goes idle
        await wait(pilot, lambda: call_id not in app.state.calls, within=15)
        await wait(pilot, lambda: app.voice.state in ("ended", "idle") and not app.phone.active)
        assert "voice: off" in _slot(app)
        said = [(r, t) for _, r, t in app.state.transcript(call_id)]
        assert ("user", "goodbye") in said and ("assistant", "Goodbye Operator!") in said
        assert any(i.exposed_name == "hangup_call" and i.status == "success" for i in app.state.invocations)


async def test_without_portaudio_the_operator_is_told_the_fix_and_text_calls_work(
    config_path: Path, wait, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_portaudio() -> None:
        raise AudioUnavailable("PortAudio library not found: install libportaudio2 (apt-get install libportaudio2)")

    monkeypatch.setattr(devmod, "import_sounddevice", no_portaudio)
    app = AvaConsole(config_path)  # the real sound-card backend and device list
    async with app.run_test(size=(120, 40)) as pilot:
        notes = record_notifications(app)
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("v")
        await wait(pilot, lambda: app.voice.problem is not None)
        assert "apt-get install libportaudio2" in (app.voice.problem or "")
        assert any("libportaudio2" in n and "Text calls still work" in n for n in notes)
        assert "voice: no audio" in _slot(app) and app.engine.live_calls() == []  # type: ignore[union-attr]
        await pilot.press("a")
        await wait(pilot, lambda: isinstance(app.screen, AudioDevicesScreen))
        problem = app.screen.query_one("#audio-problem", Static)
        await wait(pilot, lambda: "libportaudio2" in str(problem.render()))
        await pilot.press("escape")
        await pilot.press("ctrl+n")
        await wait(pilot, lambda: bool(app.state.calls) and app.selected_call in app.state.calls)
        call_id = app.selected_call
        assert call_id is not None
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "calls")
        await pilot.press("s")
        await wait(pilot, lambda: app.focused is not None and app.focused.id == "talk")
        await pilot.press(*"hello", "enter")
        await wait(pilot, lambda: "Hello! I'm listening." in [t for _, _, t in app.state.transcript(call_id)])


async def test_without_devices_the_message_names_what_is_missing(
    config_path: Path, wait, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(devmod, "list_devices", lambda rescan=False: [])
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("v")
        await wait(pilot, lambda: app.voice.problem is not None)
        assert "no audio input device found" in (app.voice.problem or "")
        await pilot.press("a")
        await wait(pilot, lambda: isinstance(app.screen, AudioDevicesScreen))
        problem = app.screen.query_one("#audio-problem", Static)
        await wait(pilot, lambda: "no microphone and no speaker" in str(problem.render()))


DEVICES = [
    DeviceInfo(0, "Built-in Audio", "ALSA", 2, 2, 48000.0),
    DeviceInfo(1, "USB Headset", "ALSA", 1, 0, 16000.0),
    DeviceInfo(2, "HDMI Out", "ALSA", 0, 2, 48000.0),
]


async def test_audio_devices_dialog_chooses_and_saves(config_path: Path, wait) -> None:
    backends = Backends()
    rescans: list[bool] = []

    def lister(rescan: bool) -> list[DeviceInfo]:
        rescans.append(rescan)
        return DEVICES

    app = AvaConsole(config_path, audio_backend_factory=backends, list_audio_devices=lister)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("a")
        await wait(pilot, lambda: isinstance(app.screen, AudioDevicesScreen))
        dialog = app.screen
        mic, speaker = dialog.query_one("#audio-input", Select), dialog.query_one("#audio-output", Select)
        await wait(pilot, lambda: "3 device(s) found" in str(dialog.query_one("#audio-problem", Static).render()))
        inputs = [str(label) for label, _ in mic._options]
        outputs = [str(label) for label, _ in speaker._options]
        assert "USB Headset" in inputs and "HDMI Out" not in inputs
        assert "HDMI Out" in outputs and "USB Headset" not in outputs
        await pilot.press("r")
        await wait(pilot, lambda: rescans == [False, True])
        await wait(pilot, lambda: "3 device(s) found" in str(dialog.query_one("#audio-problem", Static).render()))
        mic.value = "USB Headset"
        speaker.value = "HDMI Out"
        dialog.query_one("#audio-save", Checkbox).value = True
        await pilot.press("ctrl+s")
        # saving shows the diff first; y writes it
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        await pilot.press("y")
        await wait(pilot, lambda: "input_device: USB Headset" in _text(config_path))
        assert "output_device: HDMI Out" in _text(config_path)
        assert app.audio_devices == ("USB Headset", "HDMI Out")
        engine = app.engine
        assert engine is not None
        await wait(pilot, lambda: engine.settings.softphone.input_device == "USB Headset")  # reloaded
        await _voice_call(pilot, app, wait)
        assert backends.devices == [("USB Headset", "HDMI Out")]
        await pilot.press("e")
        await wait(pilot, lambda: app.voice.state == "idle")
        # the dialog preselects what is in use; choosing the system default removes the keys again
        await pilot.press("a")
        await wait(pilot, lambda: isinstance(app.screen, AudioDevicesScreen))
        dialog = app.screen
        await wait(pilot, lambda: dialog.query_one("#audio-input", Select).value == "USB Headset")
        dialog.query_one("#audio-input", Select).value = "(system default)"
        dialog.query_one("#audio-output", Select).value = "(system default)"
        dialog.query_one("#audio-save", Checkbox).value = True
        await pilot.press("ctrl+s")
        await wait(pilot, lambda: type(app.screen).__name__ == "DiffScreen")
        await pilot.press("y")
        await wait(pilot, lambda: "input_device" not in _text(config_path))
        assert app.audio_devices == (None, None)


@pytest.mark.audio
async def test_voice_call_on_a_real_sound_device(config_path: Path, wait, pulse: str) -> None:
    """PortAudio → ALSA → a private PulseAudio null sink whose monitor is the microphone: a tone played into the
    sink moves the level meter; mute and hang-up release the devices. Push-to-talk keeps the agent from hearing
    itself (no echo loop). The devices are named in the config: ALSA's "default" is not always routed to
    PulseAudio. The tone is replayed until heard, so a capture stream that opens late under load (after the
    greeting has played) does not fail the test."""
    _append(config_path, "softphone:\n  push_to_talk: true\n  input_device: pulse\n  output_device: pulse\n")
    sd = devmod.import_sounddevice()
    tone = (8000 * np.sin(2 * np.pi * 440 * np.arange(3 * 16000) / 16000)).astype(np.int16)
    app = AvaConsole(config_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await wait(pilot, lambda: app.engine_running)
        await pilot.press("v")
        await wait(pilot, lambda: app.phone is not None and app.phone.call_id is not None, within=30)
        assert app.phone is not None and app.phone.call_id is not None
        call_id = app.phone.call_id
        phone = app.phone
        device_peak, shown_peak = [-120.0], [-120.0]

        async def sample() -> None:  # every frame's level, not only what a poll happens to see
            while True:
                device_peak[0] = max(device_peak[0], phone.input_level_dbfs)
                shown_peak[0] = max(shown_peak[0], app.voice.level_dbfs)
                await asyncio.sleep(0.005)

        def heard() -> bool:
            return device_peak[0] > -50 and shown_peak[0] > -50

        sampler = asyncio.ensure_future(sample())
        try:
            for _ in range(6):
                sd.play(tone, 16000, device="pulse")
                try:
                    await wait(pilot, heard, within=4)
                    break
                except AssertionError:
                    continue
            call = phone.call
            backend: Any = call.backend if call else None
            assert heard(), (
                f"the mic never heard the tone: device peak {device_peak[0]:.0f} dBFS, shown peak "
                f"{shown_peak[0]:.0f}, state {phone.state}, samples captured {getattr(backend, '_in_position', None)}, "
                f"playbacks {call.playbacks if call else None}"
            )
        finally:
            sampler.cancel()
            sd.stop()
        await pilot.press("m")
        assert app.phone is not None and app.phone.muted
        await pilot.press("e")
        await wait(pilot, lambda: call_id not in app.state.calls and app.voice.state == "idle")
        assert app.phone.call is not None and app.phone.call.backend._closed
