"""Command-palette provider: every keyed action plus the parameterised ones ("tier: DEEP for call-3",
"tier: default FAST", "tool: off hangup_call for call-1 (now)", "call: start in demo")."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, cast

from textual.command import DiscoveryHit, Hit, Hits, Provider

if TYPE_CHECKING:
    from console.app import AvaConsole

TIER_LABEL = {"fast": "FAST", "standard": "STANDARD", "deep": "DEEP", "auto": "auto"}


class ConsoleCommands(Provider):
    @property
    def capp(self) -> AvaConsole:
        return cast("AvaConsole", self.app)

    def _commands(self) -> Iterator[tuple[str, Callable[[], object], str]]:
        app = self.capp
        screen = self.screen
        for binding in app.bindings_for_palette():
            key = binding.key_display or binding.key
            yield (
                binding.description or binding.action,
                partial(app.run_action, binding.action, screen),
                f"key {key} · {binding.id}",
            )
        for tier, label in TIER_LABEL.items():
            yield (f"tier: default {label}", partial(app.action_default_tier, tier), "the global default tier")
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
                        partial(_toggle, app, cid, name, not on, apply),
                        "",
                    )
        for context in sorted(engine.settings.contexts):
            yield (f"call: start in {context}", partial(_start_call, app, context), "softphone test call")
        for sid in sorted(engine.settings.mcp.servers):
            for action, label in (("test", "test"), ("restart", "restart")):
                yield (f"server: {label} {sid}", partial(_server_op, app, action, sid), "")

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


def _toggle(app: AvaConsole, call_id: str, name: str, enabled: bool, apply: str) -> None:
    engine = app.require_engine()
    if engine is None:
        return
    try:
        restarted = engine.set_tool_enabled(call_id, name, enabled, apply="now" if apply == "now" else "next_turn")
    except Exception as e:  # the call ended meanwhile
        app.notify(str(e), title="tools", severity="error")
        return
    how = "turn restarted" if restarted else "from the next turn"
    app.notify(f"{name} {'on' if enabled else 'off'} for {call_id}, {how}", title="tools")


def _end_call(app: AvaConsole, call_id: str) -> None:
    engine = app.require_engine()
    if engine is not None:
        app.run_worker(engine.end_call(call_id, "ended by operator"), group="calls", name="end-call")


def _start_call(app: AvaConsole, context: str) -> None:
    from console.screens.calls import CallsScreen

    app.switch_mode("calls")
    screen = app.screen
    if isinstance(screen, CallsScreen):
        screen.start_call(context, "Operator")


def _server_op(app: AvaConsole, op: str, sid: str) -> None:
    from console.screens.servers import ServersScreen

    app.switch_mode("servers")

    def go() -> None:
        screen = app.screen
        if isinstance(screen, ServersScreen):
            screen.run_op(f"{op}_server", sid)

    app.call_after_refresh(go)
