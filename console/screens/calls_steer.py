"""The Calls screen's live-steering part: ``S`` say now, ``i`` whisper, on the selected live call.

Why apart from the dialog (``steer_modal``): the Calls screen is the first screen, and its module is imported
before the first frame; the dialog's widgets (buttons) load only when the operator first steers. The engine's
``say_now`` / ``whisper`` go through the one command seam (``console.orders``: this engine, or the attached one
owning the call) and run in a worker (a say-now line on a voice call returns once it has been spoken); a
refusal — the call ended, the provider could not, a bad text — is a notification with the engine's reason.
"""

from __future__ import annotations

from typing import Protocol

from console.orders import call_label
from console.screens.calls_model import Dialogs, EngineAccess, Selection

#: The steering dialog's limit for an attached engine's call (the engine refuses longer, naming its own limit).
REMOTE_STEER_MAX_CHARS = 500


class SteerModel(Selection, EngineAccess, Protocol):
    """What steering needs: the selected call, and the engine that owns it."""


class Steering:
    """Opens the steering dialog for the selected live call, then steers it on the call's engine."""

    def __init__(self, model: SteerModel, ui: Dialogs) -> None:
        self.model, self.ui = model, ui

    def open(self, kind: str) -> None:
        model = self.model
        call_id, engine = model.selected_call, model.engine
        if not model.attached and model.require_engine() is None:
            return
        if call_id is None or call_id not in model.state.calls:
            self.ui.notify("select a live call first (Ctrl+N starts a test call)", title="steer", severity="warning")
            return

        def done(text: str | None) -> None:
            if text:
                self.steer(call_id, kind, text)

        from console.screens.steer_modal import SteerModal

        # an attached engine checks the length itself (its own steer_max_chars): the dialog takes what the wire does
        limit = engine.steer_max_chars if engine is not None else REMOTE_STEER_MAX_CHARS
        self.ui.open_dialog(SteerModal(kind, call_id, limit), done)

    def steer(self, call_id: str, kind: str, text: str) -> None:
        """Say-now or whisper on the call's engine (``console.orders``); the engine's refusal is a toast."""
        what = "said next" if kind == "say" else "whispered (hidden from the caller)"
        self.model.orders.run(
            "say_now" if kind == "say" else "whisper",
            call_id,
            {"text": text},
            title="steer",
            done=lambda a: f"{what} on {call_label(call_id)} · via {a.get('via', '?')}",
        )
