"""The Calls screen's softphone part: test calls from the softphone panel (text or voice on the local mic and
speaker), the caller's lines, hanging up, mute, push-to-talk, the audio devices dialog and the voice status.

The engine's ``Softphone`` (on the app) does the audio; this part runs it from workers of the screen (groups
"calls", "turns", "voice") and shows its state in the panel. Terminals send no key-release events, so push-to-talk
is a toggle: space starts talking, space again sends what was said. Without PortAudio or devices the operator gets
the fix, and text calls keep working.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Protocol

from console.orders import call_label
from console.screens.calls_model import Dialogs, EngineAccess, Selection, Workers

if TYPE_CHECKING:  # the panel, the devices dialog and the config saving load on first use (after the first frame)
    from pathlib import Path

    from console.screens.audio_devices import AudioChoice
    from console.voice_status import VoiceStatus
    from console.widgets.softphone import Softphone
    from engine import DeviceInfo, DeviceSpec
    from engine import Softphone as VoicePhone
    from engine.config import ConfigDocument

#: Keys that only mean something during a voice call (greyed out otherwise).
VOICE_CALL_ACTIONS = ("mute", "push_to_talk")


class VoiceModel(Selection, EngineAccess, Protocol):
    """What the softphone part needs: the selection, the engine, its softphone and the voice status."""

    phone: VoicePhone | None
    voice: VoiceStatus
    audio_devices: tuple[DeviceSpec, DeviceSpec]
    config_path: Path

    def voice_phone(self) -> VoicePhone | None: ...

    def audio_device_lister(self) -> Callable[[bool], list[DeviceInfo]]: ...


class VoiceHost(Dialogs, Workers, Protocol):
    """The screen holding the softphone panel."""

    def softphone(self) -> Softphone | None:
        """The panel, or None before it is mounted (just after the screen's first frame)."""

    def need_detail(self) -> bool:
        """Whether the panel and the call detail are there yet (if not: says the engine is still starting)."""

    def call_started(self, call_id: str) -> None:
        """A call this console started is up: select it, keys on the calls table."""

    def save_config(self, doc: ConfigDocument, title: str) -> None: ...


class Voice:
    """Starts, talks on and ends the softphone's calls, and shows the voice side in the panel."""

    def __init__(self, model: VoiceModel, host: VoiceHost) -> None:
        self.model, self.host = model, host

    def greyed(self, action: str) -> bool:
        """Mute and push-to-talk only mean something during a voice call."""
        if action not in VOICE_CALL_ACTIONS:
            return False
        phone = self.model.phone
        return phone is None or not phone.active or (action == "push_to_talk" and not phone.push_to_talk)

    # ------------------------------------------------------------------------------- the panel's requests

    def start_requested(self, context: str, caller: str, voice: bool) -> None:
        if self.model.require_engine() is None:  # still starting (no contexts yet), or failed: it says which
            return
        if not context:
            self.host.notify("choose a context first", title="softphone", severity="warning")
            return
        if voice:
            work = partial(self._start_voice, context, caller)
            self.host.run_worker(work, group="voice", name="voice-start", exclusive=True, exit_on_error=False)
        else:
            self.host.run_worker(
                partial(self._start_text, context, caller), group="calls", name="start-call", exit_on_error=False
            )

    def say(self, text: str) -> None:
        call_id = self.model.selected_call
        if call_id is None or call_id not in self.model.state.calls:
            self.host.notify("no live call selected: Ctrl+N starts one", title="softphone", severity="warning")
            return
        self.host.run_worker(partial(self._say, call_id, text), group="turns", name="say", exit_on_error=False)

    def new_call(self) -> None:
        panel = self.host.softphone()
        if self.host.need_detail() and panel is not None:
            panel.request_start()

    def voice_call(self) -> None:
        panel = self.host.softphone()
        if panel is None:  # not mounted yet: the first instant after start
            self.host.notify("the engine is still starting", title="engine", severity="warning")
            return
        panel.request_start(voice=True)

    def end_selected(self) -> None:
        call_id = self.model.selected_call
        if call_id is None or call_id not in self.model.state.calls:
            self.host.notify("no live call selected", title="call", severity="warning")
            return
        phone = self.model.phone
        if phone is not None and phone.active and phone.call_id == call_id:
            self.host.run_worker(self._end_voice, group="voice", name="voice-end", exit_on_error=False)
        else:
            self.model.orders.run(
                "end_call",
                call_id,
                {"reason": "ended by operator"},
                title="call",
                done=lambda _a: f"{call_label(call_id)}: ended by operator",
            )

    # ------------------------------------------------------------------------------------------ workers

    async def _start_text(self, context: str, caller: str) -> None:
        engine = self.model.require_engine()
        if engine is None:
            return
        try:
            session = await engine.start_call(context, caller_name=caller)
        except Exception as e:  # unknown context, provider failure
            self.host.notify(str(e), title="call", severity="error")
            return
        self.host.call_started(session.call_id)

    async def _say(self, call_id: str, text: str) -> None:
        engine = self.model.require_engine()
        if engine is None:
            return
        try:
            await engine.user_said(call_id, text)
        except Exception as e:  # call ended meanwhile, provider error
            self.host.notify(str(e), title="turn", severity="error")

    async def _start_voice(self, context: str, caller: str) -> None:
        from engine import AudioUnavailable

        phone = self.model.voice_phone()
        if phone is None:
            return
        if phone.active:
            self.host.notify(
                f"the softphone is on a voice call ({phone.call_id}): hang up first (e)",
                title="voice",
                severity="warning",
            )
            return
        voice = self.model.voice
        voice.problem = None
        try:
            call_id = await phone.start(context, *self.model.audio_devices, caller_name=caller)
        except AudioUnavailable as e:
            voice.problem = str(e)
            self.host.notify(
                f"{e}\n\nText calls still work: Ctrl+N. Devices: a.", title="no audio", severity="error", timeout=20
            )
            self.show()
            return
        except Exception as e:  # unknown context, a provider that cannot start, a bad pronunciation dictionary
            self.host.notify(f"{type(e).__name__}: {e}", title="voice", severity="error", timeout=15)
            return
        self.host.call_started(call_id)
        how = "space: talk, space again: send" if phone.push_to_talk else "just talk"
        self.host.notify(f"voice call {call_id} on {context}: {how} · m: mute · e: hang up", title="voice")

    async def _end_voice(self) -> None:
        if self.model.phone is not None:
            await self.model.phone.end("ended by operator")

    async def _save_devices(self, choice: AudioChoice) -> None:
        from engine.config import ConfigDocument, ConfigError  # the config machinery loads after the first frame

        def edited() -> ConfigDocument:
            doc = ConfigDocument.load(self.model.config_path)
            for key, value in (("input_device", choice.input_device), ("output_device", choice.output_device)):
                if value is None:
                    if doc.get(("softphone", key), None) is not None:
                        doc.remove(("softphone", key))
                else:
                    doc.set(("softphone", key), value)
            return doc

        try:
            doc = await asyncio.to_thread(edited)  # the file is read off the UI thread
        except (ConfigError, KeyError, OSError) as e:
            self.host.notify(f"not saved: {e}", title="audio devices", severity="error")
            return
        self.host.save_config(doc, "Softphone audio devices")

    # ------------------------------------------------------------------------------------ voice call keys

    def _voice_call_phone(self) -> VoicePhone | None:
        """The softphone while it has a call; otherwise None, and the operator is told how to start one."""
        phone = self.model.phone
        if phone is None or not phone.active:
            self.host.notify("no voice call: v starts one", title="voice", severity="warning")
            return None
        return phone

    def mute(self) -> None:
        phone = self._voice_call_phone()
        if phone is None:
            return
        phone.mute(not phone.muted)
        self.model.voice.muted = phone.muted
        self.show()

    def push_to_talk(self) -> None:
        phone, voice = self._voice_call_phone(), self.model.voice
        if phone is None:
            return
        if not phone.push_to_talk:
            self.host.notify(
                "push-to-talk is off: the softphone hears you by itself (softphone.push_to_talk: true turns it on)",
                title="voice",
            )
            return
        if voice.talking:
            phone.release()
        else:
            phone.press()
        voice.talking = not voice.talking
        self.show()

    def choose_devices(self) -> None:
        from console.screens.audio_devices import AudioDevicesScreen

        model = self.model

        def chosen(choice: AudioChoice | None) -> None:
            if choice is None:
                return
            model.audio_devices = (choice.input_device, choice.output_device)
            names = " / ".join(str(d) if d is not None else "system default" for d in model.audio_devices)
            self.host.notify(f"next voice call uses {names}", title="audio devices")
            if choice.save:
                self.host.run_worker(partial(self._save_devices, choice), group="config", name="audio-devices-save")

        self.host.open_dialog(AudioDevicesScreen(model.audio_devices, model.audio_device_lister()), chosen)

    def show(self) -> None:
        """Redraw the softphone's voice slot from the console's ``VoiceStatus``."""
        panel = self.host.softphone()
        if panel is None:
            return
        v, phone = self.model.voice, self.model.phone
        ptt = phone is not None and phone.active and phone.push_to_talk
        panel.show_voice(
            v.state,
            v.level_dbfs,
            muted=v.muted,
            push_to_talk=ptt,
            talking=v.talking,
            problem=v.problem,
            agent_dbfs=v.agent_dbfs,
        )
