"""AvaConsole: the operator console app. Wiring only: screens, keys, the engine's lifecycle and the event pump.

The first frame comes first: this module imports neither the engine nor the config models (nor, through them,
the MCP SDK, aiohttp, numpy …), and the screens open in "starting…" states. After the first paint a thread worker
loads the config (the Servers screen then lists its servers as starting), imports and builds the engine, and hands
it to the app's loop, where a worker starts it. Until the engine runs, every key that needs it says "the engine is
still starting" instead of acting. The engine runs in the app's own event loop. ONE worker
pumps bus events (the softphone's state and levels among them) into Textual messages in batches (an operator's key
wakes it: console/event_pump.py), and the app
hands each batch's ``Changes`` to the visible screens so they update incrementally. The console uses only the
engine's public API (``engine``, ``engine.events``, ``engine.config``; see ``engine/__init__.py``).
"""

from __future__ import annotations

import importlib
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import App, CSSPathType
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.screen import Screen
from textual.worker import get_current_worker

from console.approvals import ApprovalQueue
from console.attach import EnginesChanged
from console.attach_controls import AttachControls
from console.bindings import app_bindings
from console.cli import build_parser, main
from console.commands import ConsoleCommands
from console.crash_guard import contain, dispatch_contained
from console.elicitations import ElicitationPrompts
from console.engine_boot import EngineBoot
from console.engine_status import require_engine, show_engine_status
from console.event_pump import EventPump
from console.format import Clock
from console.messages import EngineReady, EventBatch
from console.orders import Orders
from console.replay import ReplayClock
from console.replay_controls import ReplayBatch, ReplayControls
from console.screen_feed import ScreenFeed
from console.screens.base import ConsoleScreen
from console.screens.calls import CallsScreen
from console.state import ConsoleState
from console.terminal_watch import CHECK_EVERY_S, is_terminal, terminal_gone
from console.timings_state import VIEW_ONLY, TimingsState
from console.voice_status import VoiceStatus
from console.widgets.header import Glance
from engine import list_audio_devices

if TYPE_CHECKING:  # the engine, its events, the config models and the voice modules load after the first frame
    from console.attach import AttachLink
    from console.replay import Replay
    from engine import BackendFactory, DeviceInfo, DeviceSpec, Engine, RemoteEngines, Softphone
    from engine.config import Settings
    from engine.events import Subscription

#: The entry point (``console.app:main``) and its parser stay importable from here: they live in ``console.cli``.
__all__ = ["AvaConsole", "build_parser", "main"]
log = logging.getLogger(__name__)


def _lazy_screen(module: str, name: str) -> Callable[[], Screen[Any]]:
    """A mode's screen factory that imports ``console.screens.<module>`` on the screen's first visit."""

    def make() -> Screen[Any]:
        screen: Screen[Any] = getattr(importlib.import_module(f"console.screens.{module}"), name)()
        return screen

    return make


#: How long after the first refresh the start-up work begins: enough for the first frame to reach the terminal.
FIRST_FRAME_S = 0.02


class AvaConsole(App[None]):
    TITLE = "ava-console"
    #: The first screen's styles load with the app's. As a screen's own ``CSS_PATH`` they would be read when the
    #: screen is first shown, and Textual then re-parses every stylesheet, twice: most of the styling time before
    #: the first frame. The other screens keep their ``CSS_PATH`` (read on first visit, after the first frame).
    CSS_PATH: ClassVar[CSSPathType | None] = ["app.tcss", "screens/calls.tcss"]
    #: The Calls screen is the default mode's screen (``get_default_screen``), built in the app's compose, so the
    #: first frame has it without a mode switch (which would restyle the app); ``on_mount`` registers the mode
    #: under its name so F1 (``switch_mode('calls')``) goes back to that same screen.
    DEFAULT_MODE = "calls"
    #: The first screen is imported with the app; the others (and the config machinery they use) on first visit.
    MODES: ClassVar[dict[str, Any]] = {
        "tools": _lazy_screen("invocations", "ToolLogScreen"),
        "servers": _lazy_screen("servers", "ServersScreen"),
        "budget": _lazy_screen("budget", "BudgetScreen"),
        "secrets": _lazy_screen("secrets", "SecretsScreen"),
        "outbox": _lazy_screen("outbox", "OutboxScreen"),
        "config": _lazy_screen("config", "ConfigScreen"),
        "engines": _lazy_screen("engines", "EnginesScreen"),
    }
    BINDINGS: ClassVar[list[BindingType]] = list(app_bindings())
    COMMANDS = App.COMMANDS | {ConsoleCommands}

    def __init__(
        self,
        config_path: str | Path,
        *,
        engine: Engine | None = None,
        clock: Clock | None = None,
        tick: bool = True,
        pump_interval: float = 0.05,
        serve_http: bool = False,
        audio_backend_factory: BackendFactory | None = None,
        list_audio_devices: Callable[[bool], list[DeviceInfo]] | None = None,
        replay: str | Path | None = None,
        replay_speed: float = 1.0,
        attach: str | None = None,
        token: str | None = None,
        remote: RemoteEngines | None = None,
    ) -> None:
        super().__init__()
        #: ``--attach URL``: follow engines elsewhere through this client, with no engine of its own
        #: (``console.attach_controls``); ``remote`` is a client made already (tests), else ``engine.open_remote``.
        self.attach_url = attach
        self.link: AttachLink | None = None
        self.attach_controls = AttachControls(self, attach, token, remote)
        #: ``--replay FILE``: replay this recording through the screens, with no engine (``console.replay_controls``).
        self.replays = ReplayControls(self, replay, replay_speed)
        self.config_path = Path(config_path)
        #: Run the engine's HTTP API (health, metrics, MCP status) beside the console: only when asked (``--http``).
        self.serve_http = serve_http
        #: ``--http-port``: the API's port instead of engine.http.port (0: any free one); ``--web``'s tab lock.
        self.http_port: int | None = None
        self.web_lock: Path | None = None
        self.web_lock_file: object | None = None
        self.engine: Engine | None = engine
        self.engine_error: str | None = None
        #: ``console.keymap`` as applied (binding id -> keys): a hidden binding can still say why it does nothing.
        self.applied_keymap: dict[str, str] = {}
        self.engine_running = False
        self.state = ConsoleState()
        #: Turn timings and speaking spans per call (the call view's waterfall and timeline), from events only.
        self.timings = TimingsState()
        #: The header's counts beyond the state: recent errors, failed servers (console/widgets/header.py).
        self.glance = Glance()
        self.clock = clock or (Clock() if replay is None else ReplayClock(lambda: self.replay))
        self.tick = tick
        self.pump = EventPump(pump_interval)
        self.selected_call: str | None = None
        #: This console's engine from the config file to stopped (``console.engine_boot``).
        self.boot = EngineBoot(self, owns_engine=engine is None)
        #: Who is told what changed: the mounted screens (``console.screen_feed``).
        self.feed = ScreenFeed(lambda: self.screen_stack, lambda: self.selected_call)
        #: The sound card by default; tests pass WAV/in-memory backends and device lists.
        self.audio_backend_factory = audio_backend_factory
        self.list_audio_devices = list_audio_devices
        #: The engine's local mic/speaker softphone (one voice call at a time), asked for on first use.
        self.phone: Softphone | None = None
        self.voice = VoiceStatus()
        #: Tool calls waiting for the operator (the console is the engine's approver once it is attached).
        self.approvals = ApprovalQueue()
        #: Tools' questions to the operator: a dialog each, over whatever screen is shown (console.elicitations).
        self.elicitations = ElicitationPrompts()
        #: The Calls screen, the default mode's (made in the app's compose; its detail is mounted after the frame).
        self._first_screen: ConsoleScreen | None = None
        self.audio_devices: tuple[DeviceSpec, DeviceSpec] = (None, None)
        #: Where the operator's commands go: this console's engine, or the attached engine owning the call.
        self.orders = Orders(self)

    # ----------------------------------------------------------------------------------------- lifecycle

    def get_default_screen(self) -> Screen[Any]:
        self._first_screen = CallsScreen()
        return self._first_screen

    def on_mount(self) -> None:
        self.add_mode("calls", CallsScreen)  # the name for F1: the mode's screen exists already (the default one)
        self.show_engine_status()
        if self.tick:  # recent errors age out of the header's count without new events
            self.set_interval(5.0, self.show_engine_status)
        if is_terminal(sys.__stdin__.fileno() if sys.__stdin__ is not None else -1):
            self.set_interval(CHECK_EVERY_S, self._check_terminal)
        # after the first frame is written: a refresh callback runs before the terminal write, and the start-up
        # work would hold the GIL while the frame is still being drawn
        self.call_after_refresh(self.set_timer, FIRST_FRAME_S, self._after_first_frame)
        if self.engine is not None:
            self.boot.attach(self.engine)

    def _check_terminal(self) -> None:
        """The terminal went away (window closed, tmux session killed): quit as on Ctrl+Q, without asking."""
        if sys.__stdin__ is not None and terminal_gone(sys.__stdin__.fileno()):
            log.warning("the console's terminal is gone: quitting")
            self.exit()

    @work(group="start", name="after-first-frame")
    async def _after_first_frame(self) -> None:
        """The first screen's deferred part (the Calls screen's detail), then the engine. In this order: the
        engine's imports in the worker thread would take turns with the screen for the interpreter, and the
        screen would complete about twice as late. The first screen even if another is shown by now (F2 pressed in
        the first instant): F1 comes back to it whole."""
        if self._first_screen is not None:
            await self._first_screen.after_first_frame()
        path = self.replays.replay_path
        if path is not None:  # a replay needs no engine: the screens and keys that need one say so
            self.engine_error = f"replaying {path.name}: this console has no engine"
            self.start_replay(path)
        elif self.attached:  # engines elsewhere: no engine here either (the screens that need one say so)
            remote = self.attach_controls.remote
            where = remote.description if remote is not None else self.attach_url
            self.engine_error = (
                f"attached to {where}: this console has no engine of its own (servers, budget, secrets and the "
                "softphone belong to each engine)"
            )
            self.attach_controls.start()
        elif self.engine is None and not self.boot.quitting:
            self.load_engine()

    def show_engine_status(self) -> None:
        show_engine_status(self)  # the header's sub-title (console/header_status.py)

    @property
    def attached(self) -> bool:
        return self.attach_controls.attached

    @property
    def replay_only(self) -> bool:
        return self.replays.replay_only

    @property
    def replay(self) -> Replay | None:
        return self.replays.replay

    @property
    def replay_speed(self) -> float:
        return self.replays.replay_speed

    def start_replay(self, path: str | Path, speed: float | None = None) -> None:
        self.replays.start_replay(path, speed)

    def on_replay_batch(self, message: ReplayBatch) -> None:
        self.replays.take(message)

    def action_replay_speed(self) -> None:
        self.replays.next_speed()

    def action_replay_open(self) -> None:
        self.replays.open()

    def on_engines_changed(self, message: EnginesChanged) -> None:
        self.attach_controls.changed(message)

    @work(thread=True, group="config", name="load-engine", exit_on_error=False)
    def load_engine(self) -> None:
        """Off the UI thread: load the config, then import and build the engine (``console.engine_boot``)."""
        self.boot.load(get_current_worker())

    @property
    def settings(self) -> Settings | None:
        """The config the console shows: the engine's, or the loaded file's while the engine is being built."""
        return self.engine.settings if self.engine is not None else self.boot.loaded_settings

    def voice_phone(self) -> Softphone | None:
        """The softphone (made on first use: it loads the speech engines), or None while the engine is down."""
        engine = self.require_engine()
        if engine is None:
            return None
        if self.phone is None:
            self.phone = engine.softphone(self.audio_backend_factory)
        return self.phone

    def audio_device_lister(self) -> Callable[[bool], list[DeviceInfo]]:
        if self.list_audio_devices is not None:
            return self.list_audio_devices
        return list_audio_devices

    @work(group="engine", name="engine-start", exit_on_error=False)
    async def start_engine(self, engine: Engine) -> None:
        await self.boot.start(engine)

    def cancel_workers(self, group: str) -> None:
        self.workers.cancel_group(self, group)

    @work(group="pump", name="event-pump", exclusive=True, exit_on_error=False)
    async def pump_events(self, sub: Subscription) -> None:
        await self.pump.run(sub, self.post_message)

    async def run_action(self, action: Any, default_namespace: Any = None, *args: Any, **kwargs: Any) -> bool:
        if self.attached and isinstance(action, str):  # a key of a screen that needs this console's own engine
            screen = default_namespace if isinstance(default_namespace, Screen) else self.screen
            what = getattr(screen, "LOCAL_ONLY", {}).get(action.partition("(")[0].rpartition(".")[2])
            if what is not None and (default_namespace is None or default_namespace is screen):
                self.require_engine(what)
                return True
        try:
            return await super().run_action(action, default_namespace, *args, **kwargs)
        finally:
            self.pump.wake()  # the answer to the key (a tier, a tool switched) goes out now, not after the rest
            if self.link is not None:
                self.link.wake()

    async def shutdown_engine(self) -> None:
        await self.boot.shutdown()

    async def action_quit(self) -> None:
        from console.quit_guard import quit_or_ask  # the dialog's module loads on first use

        await quit_or_ask(self, self._quit_now)  # asks first while calls are live

    async def _quit_now(self) -> None:
        await self.shutdown_engine()
        self.exit()

    async def on_unmount(self) -> None:
        await self.shutdown_engine()

    def _handle_exception(self, error: Exception) -> None:  # Textual's would exit: console/crash_guard.py
        contain(self, error, self.state, self.feed.dispatch)

    async def _dispatch_message(self, message: Message) -> None:  # the app's handlers, contained likewise
        await dispatch_contained(self, super()._dispatch_message, message)

    # ------------------------------------------------------------------------------------------ events

    def on_engine_ready(self, message: EngineReady) -> None:
        if message.error:
            self.notify(message.error, title="engine", severity="error", timeout=15)
        self.feed.rebuild()

    def on_event_batch(self, message: EventBatch) -> None:
        self.feed.batches += 1
        self.state.dropped = message.dropped
        self.approvals.take(self, message.events, self.feed.tell)
        if not self.attached:  # a tool's question is answered on its own engine's console (not a remote command)
            self.elicitations.take(self, message.events)
        voice = [e for e in message.events if e.type.startswith("softphone.")]
        if voice:  # the softphone's state and levels (from the one pump): the panel's meter, not the event log
            state_changed = self.voice.apply(voice)
            self.feed.tell("show_voice")
            if state_changed:  # mute and push-to-talk keys are live only during a voice call
                self.screen.refresh_bindings()
            if len(voice) == len(message.events):
                return
        self.timings.apply(message.events)
        changes = self.state.apply(
            e for e in message.events if not e.type.startswith("softphone.") and e.type not in VIEW_ONLY
        )
        for server, error in self.glance.apply(message.events):  # a failed server rings and says so
            self.bell()
            self.notify(f"server {server} failed: {error}", title="server", severity="error", timeout=15)
        for ev in message.events:  # a call at 80 % or 100 % of its budget (engine.usage)
            if ev.type == "usage.budget":
                from engine.events import describe_event

                reached = getattr(ev, "level", "") == "reached"
                self.notify(describe_event(ev), title="budget", severity="error" if reached else "warning", timeout=20)
        self.show_engine_status()
        self.feed.dispatch(changes)

    # ----------------------------------------------------------------------------------------- actions

    def require_engine(self, what: str = "") -> Engine | None:
        return require_engine(self, what)  # says why not (console/engine_status.py)

    def action_tier(self, tier: str) -> None:
        self.set_call_tier(self.selected_call, tier)

    def set_call_tier(self, call_id: str | None, tier: str) -> None:
        self.orders.set_call_tier(call_id, tier)

    def action_default_tier(self, tier: str) -> None:
        self.orders.set_default_tier(tier)

    # ------------------------------------------------------------------------------------------ config

    def after_config_saved(self, settings: Settings, on_saved: Callable[[Settings], None] | None = None) -> None:
        self.reload_engine(settings, on_saved)

    @work(group="config", name="engine-reload", exit_on_error=False)
    async def reload_engine(self, settings: Settings, on_saved: Callable[[Settings], None] | None = None) -> None:
        await self.boot.reload(settings, on_saved)

    def config_changed(self) -> None:
        """The engine runs a new config: every visible screen rebuilds from it."""
        self.feed.rebuild()

    def bindings_for_palette(self) -> list[Binding]:
        """Every active binding (app and current screen) for the command palette."""
        seen: dict[str, Binding] = {}
        for _node, binding, _enabled, _tooltip in self.screen.active_bindings.values():
            if binding.id and binding.id not in seen:
                seen[binding.id] = binding
        return list(seen.values())


if __name__ == "__main__":
    raise SystemExit(main())
