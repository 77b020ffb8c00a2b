"""The console as its screens, its palette and the config helpers see it: the ``Console`` Protocol (issue 34 item 13).

Why apart: typed with the app class (``AvaConsole``), every screen imports the module that imports the first screen
and the palette, which is an import circle, and the app becomes a service locator whose every attribute a screen may
reach. ``Console`` names what they use: the pieces the Calls screen's parts are given, the fields the header and the
engine's start read, and the few Textual ``App`` calls they make. The app satisfies it structurally; this module
imports no screen and not the app.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from console.engine_status import StatusHost
from console.launch import Launched
from console.ports import Workers
from console.screens.calls_approvals import ApprovalModel
from console.screens.calls_detail import DetailModel
from console.screens.calls_phone import PhoneModel
from console.screens.calls_steer import SteerModel
from console.screens.calls_table import CallsModel
from console.screens.calls_voice import VoiceModel

if TYPE_CHECKING:
    from rich.console import Console as RichConsole
    from textual.binding import Binding
    from textual.screen import Screen
    from textual.widget import Widget

    from console.orders import Orders
    from console.screen_feed import ScreenFeed
    from console.timings_state import TimingsState
    from engine.config import Settings


class Console(
    ApprovalModel, CallsModel, DetailModel, PhoneModel, SteerModel, VoiceModel, StatusHost, Launched, Workers, Protocol
):
    """The operator console: its model (state, selection, engine or attached engines), its commands, its screens."""

    tick: bool
    timings: TimingsState
    feed: ScreenFeed
    COMMAND_PALETTE_BINDING: ClassVar[str]

    @property
    def orders(self) -> Orders: ...

    @property
    def settings(self) -> Settings | None: ...

    @property
    def screen(self) -> Screen[object]: ...

    @property
    def focused(self) -> Widget | None: ...

    @property
    def console(self) -> RichConsole: ...

    @property
    def is_running(self) -> bool: ...

    def show_engine_status(self) -> None: ...

    def load_engine(self) -> object: ...

    def set_call_tier(self, call_id: str | None, tier: str) -> None: ...

    def action_default_tier(self, tier: str) -> None: ...

    def after_config_saved(self, settings: Settings, on_saved: Callable[[Settings], None] | None = None) -> None: ...

    def config_changed(self) -> None: ...

    def push_screen(self, screen: Any, callback: Any = None, wait_for_dismiss: bool = False) -> Any: ...

    def pop_screen(self) -> Any: ...

    def switch_mode(self, mode: str) -> Any: ...

    def install_screen(self, screen: Screen[Any], name: str) -> None: ...

    def is_screen_installed(self, screen: Screen[Any] | str) -> bool: ...

    def get_key_display(self, binding: Binding) -> str: ...

    def call_from_thread(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> Any: ...

    def call_after_refresh(self, callback: Callable[..., Any], *args: Any, **kwargs: Any) -> bool: ...

    async def run_action(self, action: Any, default_namespace: Any = None, *args: Any, **kwargs: Any) -> bool: ...


__all__ = ["Console"]
