"""This console's own engine, from the config file to running and back to stopped: loaded and built off the UI thread
after the first frame, started in the app's loop, reloaded on a saved config, stopped on quit.

Why apart from the app (``console.app`` is wiring): this is one job with its own state (quitting, the event
subscription, the config loaded before the engine exists), and the app's workers run its steps. It is given the
console as ``BootHost`` (the fields it sets and the hooks it calls), not the app class, so it imports no screen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from console.bindings import validate_keymap
from console.host import load_config
from console.launch import Launched, apply_overrides, claim_web_tab
from console.messages import EngineReady
from console.ports import Notifier
from engine import freeze_startup_heap

if TYPE_CHECKING:
    from pathlib import Path

    from textual.message import Message

    from console.approvals import ApprovalQueue
    from console.elicitations import ElicitationPrompts
    from console.screen_feed import ScreenFeed
    from console.state import ConsoleState
    from engine import DeviceSpec, Engine, Softphone
    from engine.config import Settings
    from engine.events import Subscription


class BootHost(Launched, Notifier, Protocol):
    """What the engine's lifecycle sets on the console and calls back."""

    config_path: Path
    serve_http: bool
    engine: Engine | None
    engine_error: str | None
    engine_running: bool
    applied_keymap: dict[str, str]
    audio_devices: tuple[DeviceSpec, DeviceSpec]
    phone: Softphone | None
    state: ConsoleState
    approvals: ApprovalQueue
    elicitations: ElicitationPrompts
    feed: ScreenFeed

    def set_keymap(self, keymap: Mapping[str, str]) -> None: ...

    def post_message(self, message: Message) -> bool: ...

    def call_from_thread(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> Any: ...

    def show_engine_status(self) -> None: ...

    def pump_events(self, sub: Subscription) -> object: ...

    def start_engine(self, engine: Engine) -> object: ...

    def cancel_workers(self, group: str) -> None: ...


class EngineBoot:
    def __init__(self, host: BootHost, *, owns_engine: bool) -> None:
        self.host = host
        #: False when the engine was handed in (tests): it is not this console's to stop.
        self.owns_engine = owns_engine
        #: Set once quitting began: an engine built after that is never started.
        self.quitting = False
        #: The config as loaded, before the engine exists.
        self.loaded_settings: Settings | None = None
        self._sub: Subscription | None = None

    def load(self, worker: Any) -> None:
        """Off the UI thread (in ``worker``): load the config, then import and build the engine (the MCP SDK,
        aiohttp …)."""
        host = self.host
        if (taken := claim_web_tab(host)) is not None:  # --web: one console per config (console/launch.py)
            self._from_thread(worker, self._failed, taken)
            return
        try:
            settings = apply_overrides(host, load_config(host.config_path))
        except Exception as e:  # shown in the UI: the console stays up to fix the config
            self._from_thread(worker, self._failed, f"{type(e).__name__}: {e}")
            return
        if not self._from_thread(worker, self._config_loaded, settings):
            return
        try:
            from engine import Engine

            engine = Engine(settings, config_path=host.config_path, serve_http=host.serve_http)
        except Exception as e:  # a provider that cannot be built, a bad script …
            self._from_thread(worker, self._failed, f"{type(e).__name__}: {e}")
            return
        self._from_thread(worker, self._built, engine)

    def _from_thread(self, worker: Any, callback: Callable[..., Any], *args: Any) -> bool:
        """Run ``callback`` on the app's loop; False once the app is quitting (nothing more to hand over)."""
        if worker.is_cancelled or self.quitting:
            return False
        try:
            self.host.call_from_thread(callback, *args)
        except RuntimeError:  # the app has exited meanwhile
            return False
        return not self.quitting

    def _config_loaded(self, settings: Settings) -> None:
        self.loaded_settings = settings
        self.host.feed.rebuild()

    def _built(self, engine: Engine) -> None:
        if self.quitting:  # quit while it was being built: it never started, so there is nothing to stop
            return
        self.host.engine = engine
        engine.configure_logging(stream=None)
        self.attach(engine)

    def _failed(self, message: str) -> None:
        self.host.engine_error = message
        self.host.show_engine_status()
        self.host.post_message(EngineReady(error=message))

    def attach(self, engine: Engine) -> None:
        """The console follows ``engine``: its keymap, its events, its approvals and questions; then it starts."""
        host = self.host
        host.state.default_tier = engine.default_tier
        keymap = dict(engine.settings.console.keymap)
        problems = validate_keymap(keymap)
        for p in problems:
            host.notify(p, title="keymap", severity="error", timeout=10)
        host.applied_keymap = {
            k: v for k, v in keymap.items() if not any(p.startswith(f"console.keymap.{k}:") for p in problems)
        }
        host.set_keymap(host.applied_keymap)
        self._sub = engine.bus.subscribe(maxsize=50_000)
        host.approvals.attach(engine)
        host.elicitations.attach(engine)
        host.pump_events(self._sub)
        host.audio_devices = (engine.settings.softphone.input_device, engine.settings.softphone.output_device)
        host.start_engine(engine)

    async def start(self, engine: Engine) -> None:
        host = self.host
        try:
            if not engine.started:
                await engine.start()
        except Exception as e:  # shown in the UI
            host.engine_error = f"engine failed to start: {type(e).__name__}: {e}"
            host.show_engine_status()
            host.post_message(EngineReady(error=host.engine_error))
            return
        host.engine_running = True
        host.show_engine_status()
        host.post_message(EngineReady())
        freeze_startup_heap()  # full GC passes then skip the ~120k start-up objects (engine/core/heap.py)

    async def shutdown(self) -> None:
        host = self.host
        self.quitting = True
        if host.phone is not None:
            await host.phone.end("console closed")  # releases the sound devices before the engine stops
        if self._sub is not None:
            self._sub.close()
        host.cancel_workers("attach")  # the link closes its client
        host.approvals.detach()  # nobody answers any more: what waits is denied, nothing waits for this console
        host.elicitations.detach()
        engine, host.engine_running = host.engine, False
        if engine is not None and self.owns_engine and (engine.started or len(engine.tasks)):
            host.cancel_workers("engine")  # quit while servers still connect: stop them, don't wait
            await engine.stop()

    async def reload(self, settings: Settings, on_saved: Callable[[Settings], None] | None = None) -> None:
        host, engine = self.host, self.host.engine
        if engine is None:
            host.notify("saved; the engine is not running, so nothing was reloaded", title="config")
            return
        try:
            await engine.reload(apply_overrides(host, settings))
        except Exception as e:  # a component refused the new config: the file is saved, say so
            host.notify(
                f"saved, but the reload failed: {type(e).__name__}: {e}", title="config", severity="error", timeout=15
            )
            return
        engine.configure_logging(stream=None)
        host.notify("saved and reloaded", title="config")
        if on_saved is not None:
            on_saved(settings)
        host.feed.rebuild()  # the engine runs a new config: every visible screen rebuilds from it
