"""Builders for the budget tests: a fake clock, tools with declared latency, and engines with a scripted context."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml

from engine.app import Engine
from engine.config.models import Settings
from engine.events import Event
from engine.sessions.session import CallSession
from engine.tools.base import (
    FunctionTool,
    LatencyMeta,
    ToolDefinition,
    ToolExecutionContext,
    ToolParameter,
    ToolResult,
)

E = TypeVar("E", bound=Event)


def only(events: Iterable[Event], cls: type[E]) -> list[E]:
    """``events``, each one asserted to be a ``cls`` (so the test reads their fields with their types)."""
    got = list(events)
    typed = [e for e in got if isinstance(e, cls)]
    assert len(typed) == len(got), f"expected only {cls.__name__}: {[e.type for e in got]}"
    return typed


class FakeClock:
    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def tool(
    name: str,
    *,
    est: int | None = None,
    mx: int | None = None,
    idempotent: bool = False,
    cacheable: int = 0,
    server: str = "builtin",
    params: tuple[ToolParameter, ...] = (),
    schema: dict[str, Any] | None = None,
    delay: float = 0.0,
    outcome: Callable[[dict[str, Any]], ToolResult] | None = None,
    calls: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> FunctionTool:
    """A tool with declared latency; ``calls`` collects the arguments of every real run."""

    async def run(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        if calls is not None:
            calls.append({"args": args, "is_probe": ctx.is_probe})
        if delay:
            await asyncio.sleep(delay)
        if outcome is not None:
            return outcome(args)
        return ToolResult.success(f"{name} ok", {"args": args})

    return FunctionTool(
        ToolDefinition(
            name=name,
            description=f"{name} tool",
            parameters=params,
            input_schema=schema,
            latency=LatencyMeta(est, mx, idempotent, cacheable),
            server=server,
            **extra,
        ),
        run,
    )


def settings_for(
    tmp_path: Path,
    tools: list[str],
    intents: list[dict[str, Any]] | None = None,
    tier: dict[str, Any] | None = None,
    **extra: Any,
) -> Settings:
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"greeting": "hi", "intents": intents or [], "fallback": "say again?"}))
    raw: dict[str, Any] = {
        "providers": {"s": {"type": "scripted", "script": str(script)}},
        "contexts": {"c": {"provider": "s", "tools": tools, "tier": tier or {"default": "standard"}}},
    }
    raw.update(extra)
    return Settings.model_validate(raw)


def engine_for(settings: Settings, *tools: FunctionTool, clock: FakeClock | None = None) -> Engine:
    engine = Engine(settings, extra_tools=list(tools))
    if clock is not None:
        engine.budget.set_clock(clock)
    return engine


def session_on(tier: str, shown: set[str], call_id: str = "call-t") -> CallSession:
    s = CallSession(call_id=call_id, context="c", provider="s", tier=tier)
    s.shown_tools = frozenset(shown)
    return s
