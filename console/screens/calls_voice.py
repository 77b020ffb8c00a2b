"""The Calls screen's voice side: start and hang up a voice call on the local mic and speaker, mute,
push-to-talk, the audio devices dialog, and the voice status in the softphone panel.

The engine's ``Softphone`` (on the app) does the audio; this mixin runs it from workers (group "voice") and shows
its state. Terminals send no key-release events, so push-to-talk is a toggle: space starts talking, space again
sends what was said. Without PortAudio or devices the operator gets the fix, and text calls keep working.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual import work

from console.screens.base import ConsoleScreen

if TYPE_CHECKING:  # the panel, the devices dialog and the config saving load on first use (after the first frame)
    from console.screens.audio_devices import AudioChoice
    from console.widgets.softphone import Softphone
    from engine import Softphone as VoicePhone


class VoiceControls(ConsoleScreen):
    """Voice actions and workers for a screen that holds the ``Softphone`` panel."""

    def voice_call_started(self, call_id: str) -> None:
        """A voice call is up: make it the selected call."""
        self.capp.selected_call = call_id

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Mute and push-to-talk only mean something during a voice call (greyed out otherwise)."""
        if action in ("mute", "push_to_talk"):
            phone = self.capp.phone
            if phone is None or not phone.active:
                return None
            if action == "push_to_talk" and not phone.push_to_talk:
                return None
        return super().check_action(action, parameters)

    @work(group="voice", name="voice-start", exclusive=True, exit_on_error=False)
    async def start_voice_call(self, context: str, caller: str) -> None:
        from engine import AudioUnavailable

        phone = self.capp.voice_phone()
        if phone is None:
            return
        if phone.active:
            self.notify(
                f"the softphone is on a voice call ({phone.call_id}): hang up first (e)",
                title="voice",
                severity="warning",
            )
            return
        voice = self.capp.voice
        voice.problem = None
        try:
            call_id = await phone.start(context, *self.capp.audio_devices, caller_name=caller)
        except AudioUnavailable as e:
            voice.problem = str(e)
            self.notify(
                f"{e}\n\nText calls still work: Ctrl+N. Devices: a.", title="no audio", severity="error", timeout=20
            )
            self.show_voice()
            return
        except Exception as e:  # unknown context, a provider that cannot start, a bad pronunciation dictionary
            self.notify(f"{type(e).__name__}: {e}", title="voice", severity="error", timeout=15)
            return
        self.voice_call_started(call_id)
        how = "space: talk, space again: send" if phone.push_to_talk else "just talk"
        self.notify(f"voice call {call_id} on {context}: {how} · m: mute · e: hang up", title="voice")

    @work(group="voice", name="voice-end", exit_on_error=False)
    async def end_voice_call(self) -> None:
        if self.capp.phone is not None:
            await self.capp.phone.end("ended by operator")

    @work(thread=True, group="config", name="audio-devices-save")
    def save_audio_devices(self, choice: AudioChoice) -> None:
        from console.config_flow import save_document
        from engine.config import ConfigDocument, ConfigError  # the config machinery loads after the first frame

        try:
            doc = ConfigDocument.load(self.capp.config_path)
            for key, value in (("input_device", choice.input_device), ("output_device", choice.output_device)):
                if value is None:
                    if doc.get(("softphone", key), None) is not None:
                        doc.remove(("softphone", key))
                else:
                    doc.set(("softphone", key), value)
        except (ConfigError, KeyError, OSError) as e:
            self.app.call_from_thread(self.notify, f"not saved: {e}", title="audio devices", severity="error")
            return
        self.app.call_from_thread(save_document, self.capp, doc, "Softphone audio devices")

    def _panel(self) -> Softphone | None:
        """The softphone panel, or None before it is mounted (the Calls screen mounts it after its first frame)."""
        if not self.is_mounted or not self.query("#softphone"):
            return None
        from console.widgets.softphone import Softphone

        return self.query_one("#softphone", Softphone)

    def action_voice_call(self) -> None:
        panel = self._panel()
        if panel is None:  # not mounted yet: the first instant after start
            self.notify("the engine is still starting", title="engine", severity="warning")
            return
        panel.request_start(voice=True)

    def _voice_call_phone(self) -> VoicePhone | None:
        """The softphone while it has a call; otherwise None, and the operator is told how to start one."""
        phone = self.capp.phone
        if phone is None or not phone.active:
            self.notify("no voice call: v starts one", title="voice", severity="warning")
            return None
        return phone

    def action_mute(self) -> None:
        phone = self._voice_call_phone()
        if phone is None:
            return
        phone.mute(not phone.muted)
        self.capp.voice.muted = phone.muted
        self.show_voice()

    def action_push_to_talk(self) -> None:
        phone, voice = self._voice_call_phone(), self.capp.voice
        if phone is None:
            return
        if not phone.push_to_talk:
            self.notify(
                "push-to-talk is off: the softphone hears you by itself (softphone.push_to_talk: true turns it on)",
                title="voice",
            )
            return
        if voice.talking:
            phone.release()
        else:
            phone.press()
        voice.talking = not voice.talking
        self.show_voice()

    def action_audio_devices(self) -> None:
        from console.screens.audio_devices import AudioDevicesScreen

        def chosen(choice: AudioChoice | None) -> None:
            if choice is None:
                return
            self.capp.audio_devices = (choice.input_device, choice.output_device)
            names = " / ".join(str(d) if d is not None else "system default" for d in self.capp.audio_devices)
            self.notify(f"next voice call uses {names}", title="audio devices")
            if choice.save:
                self.save_audio_devices(choice)

        self.app.push_screen(AudioDevicesScreen(self.capp.audio_devices, self.capp.audio_device_lister()), chosen)

    def show_voice(self) -> None:
        """Redraw the softphone's voice slot from the app's ``VoiceStatus``."""
        panel = self._panel()
        if panel is None:
            return
        v, phone = self.capp.voice, self.capp.phone
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
