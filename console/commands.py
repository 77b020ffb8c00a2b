"""Command-palette provider: every keyed action (of the screen the palette was opened on, and of every other
screen, which the command switches to first) plus the parameterised ones ("tier: DEEP for call-3",
"tier: default FAST", "tool: off hangup_call for call-1 (now)", "call: start in demo").

The keys come from the screen the palette was opened on (``Provider.screen``), not ``app.screen``: with the palette
open that is the palette itself, whose bindings are none of ours. ``screen_keys`` is also what the ``?`` key help
lists.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from textual.actions import parse
from textual.binding import Binding, BindingsMap
from textual.command import DiscoveryHit, Hit, Hits, Provider

from console._compat import app_keymap, merged_bindings, node_bindings
from console.bindings import SCREENS
from console.orders import toggle_tool
from console.widgets.keybar import SHIFTED

if TYPE_CHECKING:
    from textual.app import App
    from textual.dom import DOMNode
    from textual.screen import Screen

    from console.console_port import Console

TIER_LABEL = {"fast": "FAST", "standard": "STANDARD", "deep": "DEEP", "auto": "auto"}
#: Each mode's screen class (module under ``console.screens``, class), for the keys of the screens not shown.
SCREEN_CLASSES = {
    "calls": ("calls", "CallsScreen"),
    "tools": ("invocations", "ToolLogScreen"),
    "servers": ("servers", "ServersScreen"),
    "budget": ("budget", "BudgetScreen"),
    "secrets": ("secrets", "SecretsScreen"),
    "outbox": ("outbox", "OutboxScreen"),
    "config": ("config", "ConfigScreen"),
    "engines": ("engines", "EnginesScreen"),
}


def _keyed(node: DOMNode, bindings: BindingsMap) -> Iterator[tuple[DOMNode, Binding]]:
    """The bindings with an id (ours; Textual's own cursor keys have none), after the user's ``console.keymap``."""
    keymap = app_keymap(node.app)
    if keymap:
        bindings = bindings.copy()
        bindings.apply_keymap(keymap)
    seen: set[str] = set()
    for key_bindings in bindings.key_to_bindings.values():
        for b in key_bindings:
            if b.id and b.id not in seen:
                seen.add(b.id)
                yield node, b


def screen_keys(screen: Screen[Any]) -> list[tuple[DOMNode, Binding]]:
    """Every keyed binding that acts on ``screen``: the focused widget's and its containers', the screen's, and the
    app's (unless ``screen`` is a dialog, whose keys are the only ones that act). Keys an input would type are kept:
    they act once the focus leaves the input."""
    focused = screen.focused
    nodes: list[DOMNode] = list(focused.ancestors_with_self) if focused is not None else [screen, screen.app]
    if screen not in nodes:
        nodes[-1:-1] = [screen]
    out: dict[str, tuple[DOMNode, Binding]] = {}
    for node in nodes:
        if node is screen.app and screen.is_modal:
            break
        for found in _keyed(node, node_bindings(node)):
            out.setdefault(found[1].id or "", found)
    return list(out.values())


def offered(node: DOMNode, binding: Binding) -> bool:
    """False for a key its screen hides now (``check_action`` says False: the phone keys without a phone call)."""
    namespace, action, parameters = parse(binding.action)
    return bool(namespace) or node.check_action(action, parameters) is not False


def screen_title(screen: Screen[Any]) -> str:
    """The screen's name as the keys show it ("Servers"), else its class name (a dialog)."""
    for mode, (_module, name) in SCREEN_CLASSES.items():
        if type(screen).__name__ == name:
            return SCREENS[mode][1]
    return type(screen).__name__


def binding_key(app: App[Any], binding: Binding) -> str:
    """How a binding's key is shown: "/" for slash, "^n", "F3", "⇧F5" (its first key when it has several)."""
    if binding.key_display:
        return binding.key_display
    first = binding.key.split(",")[0].strip()
    if first in SHIFTED:
        return SHIFTED[first]
    if re.fullmatch(r"f\d+", first):
        return first.upper()
    return app.get_key_display(replace(binding, key=first))


class ConsoleCommands(Provider):
    @property
    def capp(self) -> Console:
        return cast("Console", self.app)

    def _commands(self) -> Iterator[tuple[str, Callable[[], object], str]]:
        app = self.capp
        here: set[str] = set()
        for node, binding in screen_keys(self.screen):
            if not offered(node, binding):
                continue
            here.add(binding.id or "")
            yield (
                binding.description or binding.action,
                partial(app.run_action, binding.action, node),
                f"key {binding_key(self.app, binding)} · {binding.id}",
            )
        yield from self._other_screens(here)
        for tier, label in TIER_LABEL.items():
            yield (f"tier: default {label}", partial(app.action_default_tier, tier), "the global default tier")
        if app.attached:
            yield from self._attached_calls()
            return
        engine = app.engine
        if engine is None:
            return
        for call in engine.calls_info():
            cid = call.call_id
            for tier, label in TIER_LABEL.items():
                yield (
                    f"tier: {label} for {cid}",
                    partial(app.set_call_tier, cid, tier),
                    f"{call.context} · caller {call.caller_name or '-'}",
                )
            yield (f"call: end {cid}", partial(_end_call, app, cid), "")
            try:
                states = {t.name: t for t in engine.tool_states(cid)}
            except Exception:  # a call ending right now: skip its tools
                continue
            for name in sorted(states):
                on = states[name].enabled
                verb = "off" if on else "on"
                for apply in ("next_turn", "now"):
                    yield (
                        f"tool: {verb} {name} for {cid} ({apply.replace('_', ' ')})",
                        partial(toggle_tool, app, cid, name, not on, apply),
                        "",
                    )
        for context in sorted(engine.settings.contexts):
            yield (f"call: start in {context}", partial(_start_call, app, context), "softphone test call")
        for sid in sorted(engine.settings.mcp.servers):
            for action, label in (("test", "test"), ("restart", "restart")):
                yield (f"server: {label} {sid}", partial(_server_op, app, action, sid), "")

    def _attached_calls(self) -> Iterator[tuple[str, Callable[[], object], str]]:
        """An attached console's calls (keyed engine/call): tiers, end, and the tools the console knows of."""
        from console.orders import call_label

        app = self.capp
        link = app.link
        for ref, row in list(app.state.calls.items()):
            where = call_label(ref)
            for tier, label in TIER_LABEL.items():
                yield (
                    f"tier: {label} for {where}",
                    partial(app.set_call_tier, ref, tier),
                    f"{row.context} · caller {row.caller}",
                )
            yield (f"call: end {where}", partial(_end_call, app, ref), "")
            engine_id = ref.partition("/")[0]
            names = set(link.tools.get(engine_id, {}) if link is not None else ())
            names |= set(app.state.tools_used.get(ref, {}))
            switches = app.state.tool_switches.get(ref, {})
            for name in sorted(names | set(switches)):
                on = switches.get(name, True)
                for apply in ("next_turn", "now"):
                    yield (
                        f"tool: {'off' if on else 'on'} {name} for {where} ({apply.replace('_', ' ')})",
                        partial(toggle_tool, app, ref, name, not on, apply),
                        "",
                    )

    def _other_screens(self, here: set[str]) -> Iterator[tuple[str, Callable[[], object], str]]:
        """The keyed actions of the screens not shown: the command switches to the screen, then acts there."""
        app = self.capp
        for mode, (module, name) in SCREEN_CLASSES.items():
            if isinstance(self.screen, _screen_class(module, name)):
                continue
            switch, title = SCREENS[mode]
            merged = merged_bindings(_screen_class(module, name))
            for _node, binding in _keyed(self.app, merged):
                if binding.id in here or binding.id == "key_help":
                    continue
                yield (
                    f"{title}: {binding.description or binding.action}",
                    partial(_on_screen, app, mode, binding.action),
                    f"key {switch.upper()} then {binding_key(self.app, binding)} · {binding.id}",
                )

    async def discover(self) -> Hits:
        for title, cb, help_text in self._commands():
            if title.startswith(("tier: default", "call: start")) or "key " in help_text:
                yield DiscoveryHit(title, cb, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for title, cb, help_text in self._commands():
            score = matcher.match(title)
            if score > 0:
                yield Hit(score, matcher.highlight(title), cb, help=help_text)


def _screen_class(module: str, name: str) -> type[Screen[Any]]:
    cls: type[Screen[Any]] = getattr(importlib.import_module(f"console.screens.{module}"), name)
    return cls


def _on_screen(app: Console, mode: str, action: str) -> None:
    """Switch to ``mode``'s screen, then run ``action`` there (once the screen is shown)."""
    app.switch_mode(mode)

    async def run() -> None:
        await app.run_action(action, app.screen)

    app.call_after_refresh(run)


def _end_call(app: Console, call_id: str) -> None:
    from console.orders import call_label

    app.orders.run(
        "end_call",
        call_id,
        {"reason": "ended by operator"},
        title="call",
        done=lambda _a: f"{call_label(call_id)}: ended by operator",
    )


def _start_call(app: Console, context: str) -> None:
    from console.screens.calls import CallsScreen

    app.switch_mode("calls")
    screen = app.screen
    if isinstance(screen, CallsScreen):
        screen.voice.start_requested(context, "Operator", voice=False)


def _server_op(app: Console, op: str, sid: str) -> None:
    from console.screens.servers import ServersScreen

    app.switch_mode("servers")

    def go() -> None:
        screen = app.screen
        if isinstance(screen, ServersScreen):
            screen.run_op(f"{op}_server", sid)

    app.call_after_refresh(go)
