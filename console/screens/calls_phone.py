"""The Calls screen's phone side: the operator on a live phone call (listen, whisper, take over, hand back, transfer).

Phone calls come from Asterisk; the engine's ``monitor_call`` puts the operator's sound devices (the ones chosen
in the audio dialog) on the selected call's channel. A taken-over call stays one live row (state ``operator``);
the channel being monitored is remembered here, so ``b`` hands that call back even when another row is selected.
The phone keys are offered only while a phone call is selected; pressed on any other call they say why.
Commands run in workers (group "phone", on the screen); a refusal (not a phone call, no sound device, Asterisk said
no) is a notification with the reason.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import TYPE_CHECKING, Protocol

from textual.binding import Binding, BindingType

from console.screens.calls_model import Dialogs, EngineAccess, Selection, Workers

if TYPE_CHECKING:
    from textual import events

    from console.attach import AttachLink
    from engine import CallInfo, DeviceSpec
    from engine.config.models.tools import TransferTarget

MODE_TITLES = {
    "listen": "listening",
    "whisper_agent": "whispering to the agent",
    "whisper_caller": "whispering to the caller",
    "takeover": "on the line (AI out)",
    "off": "off the line",
}


#: The State column's badge while the operator is on a call (``call.monitor_changed``; ``CallRow.operator``).
OPERATOR_BADGES = {
    "listen": "op listening",
    "whisper_agent": "op whispering to agent",
    "whisper_caller": "op whispering to caller",
    "takeover": "op has the call",
}
#: The operator's phone actions: in the footer and the palette only while a phone call is selected.
PHONE_ACTIONS = frozenset({"monitor", "transfer"})


def state_text(state: str, transfer: str | None, operator: str) -> str:
    """The Calls table's State: the call's state, its transfer, and the operator's badge (a call the operator has
    taken over is in state ``operator``: the badge says it)."""
    parts = [] if state == "operator" and operator else [state]
    parts += [p for p in (transfer, OPERATOR_BADGES.get(operator, operator)) if p]
    return " · ".join(parts)


def line_text(info: CallInfo | None) -> str:
    """Where the call comes from: a phone channel with its media and transfer state, else the console."""
    if info is None or not info.channel_id:
        return "console"
    parts = ["phone", (info.media or "").split(" ")[0] or "?"]
    if info.transfer:
        parts.append(info.transfer)
    return " · ".join(parts)


class PhoneModel(Selection, EngineAccess, Protocol):
    """What the phone part needs: the selection, the engine (or the attached engines' link), the operator's devices
    and keymap."""

    audio_devices: tuple[DeviceSpec, DeviceSpec]
    applied_keymap: dict[str, str]
    link: AttachLink | None


class PhoneHost(Dialogs, Workers, Protocol):
    """The screen the phone keys are bound on: its bindings, and the workers the commands run in."""

    def other_focus(self) -> bool:
        """Whether a widget other than the calls table has the focus (its own keys come first)."""

    def refresh_bindings(self) -> None: ...

    def update_keybar(self) -> None: ...


class Phone:
    """Operator actions for the selected phone call."""

    def __init__(self, model: PhoneModel, host: PhoneHost, bindings: Sequence[BindingType]) -> None:
        self.model, self.host, self.bindings = model, host, bindings
        #: The caller's channel the operator is on (None: not on any call).
        self.operator_channel: str | None = None
        #: Whether the phone keys were offered when the bindings were last refreshed.
        self._phone_keys = False

    def allows(self, action: str) -> bool | None:
        """The screen's ``check_action`` for the phone actions (None: not one of them)."""
        return self._phone_selected() if action in PHONE_ACTIONS else None

    def on_key(self, event: events.Key) -> None:
        """A phone key on a call that is not a phone call: its binding is hidden, so say why nothing happens."""
        if self.host.other_focus():
            return
        if event.key in self._phone_binding_keys() and not self._phone_selected():
            event.stop()
            event.prevent_default()
            why = "select a live phone call first (the Line column says phone)"
            self.host.notify(why, title="operator", severity="warning")

    def _phone_binding_keys(self) -> set[str]:
        keymap = self.model.applied_keymap
        keys: set[str] = set()
        for b in self.bindings:
            if isinstance(b, Binding) and b.id and b.action.split("(")[0] in PHONE_ACTIONS:
                keys.update(k.strip() for k in keymap.get(b.id, b.key).split(","))
        return keys

    def _phone_selected(self) -> bool:
        """A phone call is selected (the operator's keys act on it), or the operator is on one."""
        call_id = self.model.selected_call
        if self.model.attached:  # the remote engine transfers its phone calls; its lines are its own
            return call_id is not None and call_id in self.model.state.calls
        return self.operator_channel is not None or self._phone_channel() is not None

    def follow_keys(self) -> None:
        """The selection or its line changed: the footer and the palette offer the phone keys if they apply."""
        if self._phone_selected() != self._phone_keys:
            self._phone_keys = not self._phone_keys
            self.host.refresh_bindings()

    def _phone_channel(self) -> str | None:
        """The selected call's Asterisk channel, or the one the operator is on (after a take-over)."""
        engine = self.model.engine
        call_id = self.model.selected_call
        if engine is not None and call_id is not None:
            info = engine.call_info(call_id)
            if info is not None and info.channel_id:
                return info.channel_id
        return self.operator_channel

    def monitor(self, mode: str) -> None:
        channel = self._phone_channel()
        if channel is None:
            self.host.notify(
                "select a phone call first (the Line column says phone)", title="operator", severity="warning"
            )
            return
        if mode == "off" and self.operator_channel is None:
            self.host.notify("you are not on a call", title="operator", severity="warning")
            return
        self.host.run_worker(
            partial(self._monitor, channel, mode), group="phone", name="monitor", exclusive=True, exit_on_error=False
        )

    async def _monitor(self, channel: str, mode: str) -> None:
        engine = self.model.require_engine()
        if engine is None:
            return
        try:
            await engine.monitor_call(channel, mode, devices=self.model.audio_devices)
        except Exception as e:  # not a phone call any more, no sound device, Asterisk refused
            self.host.notify(str(e), title="operator", severity="error")
            return
        self.operator_channel = None if mode == "off" else channel
        self.host.notify(f"{MODE_TITLES.get(mode, mode)} · {channel}", title="operator")
        self.host.update_keybar()

    def open_transfer(self) -> None:
        """``T``: transfer the selected phone call to a destination of ``tools.extensions`` (blind or warm)."""
        call_id = self.model.selected_call
        if self.model.attached:  # the call's engine knows its destinations (and whether it is a phone call)
            if call_id is None or call_id not in self.model.state.calls:
                self.host.notify("select a live call first", title="transfer", severity="warning")
                return
            from console.orders import call_label
            from console.screens.transfer_modal import TransferModal

            def chosen(choice: tuple[str, str] | None) -> None:
                if choice is not None:
                    self.transfer(call_id, *choice)

            self.host.open_dialog(TransferModal(call_label(call_id), self._remote_destinations(call_id)), chosen)
            return
        engine = self.model.require_engine()
        if engine is None:
            return
        info = engine.call_info(call_id) if call_id is not None else None
        if call_id is None or info is None or not info.channel_id:
            self.host.notify(
                "select a live phone call first (the Line column says phone)", title="transfer", severity="warning"
            )
            return

        def done(choice: tuple[str, str] | None) -> None:
            if choice is not None:
                self.transfer(call_id, *choice)

        from console.screens.transfer_modal import TransferModal

        self.host.open_dialog(TransferModal(call_id, engine.settings.tools.extensions), done)

    def _remote_destinations(self, call_id: str) -> dict[str, TransferTarget] | None:
        """The call's engine's transfer destinations as its heartbeat lists them (None: an engine that does not
        list them; the operator then types a name)."""
        from console.attach import engine_of
        from engine.config.models.tools import TransferTarget

        link = self.model.link
        row = link.engines.get(engine_of(call_id)) if link is not None else None
        listed = row.info.raw.get("transfer_destinations") if row is not None and row.info is not None else None
        if not isinstance(listed, list) or not listed:
            return None
        out: dict[str, TransferTarget] = {}
        for d in listed:
            try:
                out[str(d["name"])] = TransferTarget(
                    destination=str(d["destination"]), description=str(d.get("description") or "")
                )
            except (KeyError, TypeError, ValueError):  # a malformed entry: skipped, the engine checks the name anyway
                continue
        return out or None

    def transfer(self, call_id: str, destination: str, mode: str) -> None:
        """Transfer on the call's engine (``console.orders``); its refusal (the call ended, Asterisk refused, not a
        destination) is a notification."""
        from console.orders import call_label

        self.model.orders.run(
            "transfer_call",
            call_id,
            {"destination": destination, "mode": mode},
            title="transfer",
            done=lambda a: f"{mode} transfer of {call_label(call_id)} to {a.get('target', destination)} started",
        )
