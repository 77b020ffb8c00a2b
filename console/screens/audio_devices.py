"""Audio devices: choose the softphone's microphone and speaker, or read why there is no audio and how to fix it.

The device list comes from PortAudio in a thread worker (opening PortAudio can take a moment and must not block
the screen); "rescan" re-initialises PortAudio to see a headset plugged in since start-up. The choice applies to
the next voice call; "save as default" writes it to ``softphone.input_device`` / ``output_device`` (after the diff).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Checkbox, Label, Select, Static

from console.crash_guard import ContainErrors
from console.widgets.tick_box import TickBox

if TYPE_CHECKING:  # the voice modules pull in numpy: imported when a voice feature is first used
    from engine import DeviceInfo, DeviceSpec

DEFAULT = "(system default)"
DeviceLister = Callable[[bool], "list[DeviceInfo]"]
NO_DEVICE_FIX = (
    "connect a headset, or on Linux run PulseAudio/PipeWire with the ALSA pulse plugin "
    "(apt-get install libasound2-plugins), then press r to rescan"
)


@dataclass(frozen=True, slots=True)
class AudioChoice:
    input_device: DeviceSpec
    output_device: DeviceSpec
    save: bool


def missing_devices(devices: list[DeviceInfo]) -> str | None:
    """What is missing for a voice call (a microphone, a speaker), with the fix; None when both exist."""
    missing = [
        kind
        for kind, ok in (
            ("microphone", any(d.max_input_channels for d in devices)),
            ("speaker", any(d.max_output_channels for d in devices)),
        )
        if not ok
    ]
    if not missing:
        return None
    return f"PortAudio sees no {' and no '.join(missing)} ({len(devices)} device(s) in all): {NO_DEVICE_FIX}"


class AudioDevicesScreen(ContainErrors, ModalScreen[AudioChoice | None]):
    CSS_PATH = "audio_devices.tcss"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "rescan", "Rescan devices", id="audio_rescan"),
        Binding("ctrl+s", "use", "Use these devices", id="audio_use"),
        Binding("escape", "cancel", "Cancel", id="audio_cancel"),
    ]

    def __init__(self, current: tuple[DeviceSpec, DeviceSpec], lister: DeviceLister) -> None:
        super().__init__()
        self.current = current
        self.lister = lister

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Softphone audio devices", classes="section-title")
            yield Static("looking for devices…", id="audio-problem", classes="muted")
            yield Label("Microphone")
            yield Select[str]([(DEFAULT, DEFAULT)], id="audio-input", allow_blank=False)
            yield Label("Speaker")
            yield Select[str]([(DEFAULT, DEFAULT)], id="audio-output", allow_blank=False)
            yield TickBox("save as the default in the config file", id="audio-save")
            with Horizontal(classes="buttons"):
                yield Button("Use (Ctrl+S)", id="audio-use-button", variant="primary")
                yield Button("Rescan (r)", id="audio-rescan-button")
                yield Button("Cancel (Esc)", id="audio-cancel-button")

    def on_mount(self) -> None:
        self.load_devices(False)

    @work(thread=True, group="audio", name="list-devices", exclusive=True, exit_on_error=False)
    def load_devices(self, rescan: bool) -> None:
        from engine import AudioUnavailable

        try:
            devices = self.lister(rescan)
        except AudioUnavailable as e:
            self.app.call_from_thread(self._show, [], f"{e}. Text calls still work (Ctrl+N).")
            return
        problem = missing_devices(devices)
        self.app.call_from_thread(self._show, devices, f"{problem}. Text calls still work (Ctrl+N)." if problem else "")

    def _show(self, devices: list[DeviceInfo], problem: str) -> None:
        note = self.query_one("#audio-problem", Static)
        note.update(problem or f"{len(devices)} device(s) found")
        note.set_class(bool(problem), "error-text")
        for select_id, kind, spec in (
            ("#audio-input", "input", self.current[0]),
            ("#audio-output", "output", self.current[1]),
        ):
            select = self.query_one(select_id, Select)
            names = [d.name for d in devices if (d.max_input_channels if kind == "input" else d.max_output_channels)]
            chosen = _option_for(spec, devices, names)
            options = [(DEFAULT, DEFAULT)] + [(n, n) for n in names]
            if chosen != DEFAULT and chosen not in names:
                options.append((f"{chosen} (not found)", chosen))
            select.set_options(options)
            select.value = chosen

    def _choice(self) -> AudioChoice:
        def spec(select_id: str) -> DeviceSpec:
            value = self.query_one(select_id, Select).value
            return value if isinstance(value, str) and value != DEFAULT else None

        save = self.query_one("#audio-save", Checkbox).value
        return AudioChoice(spec("#audio-input"), spec("#audio-output"), save)

    def action_rescan(self) -> None:
        self.query_one("#audio-problem", Static).update("rescanning…")
        self.load_devices(True)

    def action_use(self) -> None:
        self.dismiss(self._choice())

    def action_cancel(self) -> None:
        self.dismiss(None)

    @on(Button.Pressed, "#audio-use-button")
    def _use(self) -> None:
        self.action_use()

    @on(Button.Pressed, "#audio-rescan-button")
    def _rescan(self) -> None:
        self.action_rescan()

    @on(Button.Pressed, "#audio-cancel-button")
    def _cancel(self) -> None:
        self.action_cancel()


def _option_for(spec: DeviceSpec, devices: list[DeviceInfo], names: list[str]) -> str:
    """The option to preselect for a configured device (an index, a name or a name substring)."""
    if spec is None:
        return DEFAULT
    if isinstance(spec, int):
        return next((d.name for d in devices if d.index == spec and d.name in names), DEFAULT)
    return next((n for n in names if spec.lower() in n.lower()), spec)
