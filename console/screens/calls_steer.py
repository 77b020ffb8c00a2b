"""The Calls screen's live-steering keys: ``S`` say now, ``i`` whisper, on the selected live call.

Why apart from the dialog (``steer_modal``): the Calls screen is the first screen, and its module is imported
before the first frame; the dialog's widgets (buttons) load only when the operator first steers. The engine's
``say_now`` / ``whisper`` run in a worker (a say-now line on a voice call returns once it has been spoken); a
refusal — the call ended, the provider could not, a bad text — is a notification with the engine's reason.
"""

from __future__ import annotations

from textual import work

from console.screens.base import ConsoleScreen


class SteerControls(ConsoleScreen):
    """The Calls screen's steering keys (a mixin): open the dialog for the selected live call, then steer it."""

    def action_steer(self, kind: str) -> None:
        engine = self.capp.require_engine()
        call_id = self.capp.selected_call
        if engine is None:
            return
        if call_id is None or call_id not in self.capp.state.calls:
            self.notify("select a live call first (Ctrl+N starts a test call)", title="steer", severity="warning")
            return

        def done(text: str | None) -> None:
            if text:
                self.steer(call_id, kind, text)

        from console.screens.steer_modal import SteerModal

        self.app.push_screen(SteerModal(kind, call_id, engine.steer_max_chars), done)

    @work(group="steer", name="steer", exit_on_error=False)
    async def steer(self, call_id: str, kind: str, text: str) -> None:
        engine = self.capp.require_engine()
        if engine is None:
            return
        try:
            if kind == "say":
                via = await engine.say_now(call_id, text)
            else:
                via = await engine.whisper(call_id, text)
        except Exception as e:  # the call ended meanwhile, the provider refused, a bad text
            self.notify(str(e), title="steer", severity="error")
            return
        done = "said next" if kind == "say" else "whispered (hidden from the caller)"
        self.notify(f"{done} on {call_id} · via {via}", title="steer")
