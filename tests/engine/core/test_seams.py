"""The engine's seams: one task group of named tasks, parts built from narrow dependencies, the budget layer
plugged in through declared hooks, and ``config.reloaded`` from ``Engine.reload``."""

from __future__ import annotations

import asyncio
import inspect
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from engine.app import Engine
from engine.budget.layer import BudgetLayer
from engine.calls.manager import CallManager
from engine.config.models import Settings
from engine.core.metrics import Metrics
from engine.core.tasks import EngineTasks, TaskGroupClosed
from engine.events import ConfigReloaded, EngineError, EventBus
from engine.mcp.host import McpHost
from engine.mcp_endpoint.component import McpEndpoint
from engine.services import Services
from engine.sessions.session import CallSession
from engine.tools.base import ToolResult
from engine.tools.registry import ToolRegistry
from tests.engine.budget.helpers import settings_for

FIXTURE_SERVER = str(Path(__file__).parents[2] / "fixtures" / "mcp_servers" / "fixture_server.py")
INPROC = {"transport": "inprocess", "target": "tests.fixtures.mcp_servers.inproc:server"}
UNNAMED = re.compile(r"^Task-\d+$")


def _settings(**mcp_server: Any) -> Settings:
    return Settings.model_validate(
        {
            "engine": {
                "http": {"enabled": False},
                "tool_timeout_ms": 5000,
                "mcp_server": {"enabled": True, "expose": ["mcp_hi_greet"], **mcp_server},
            },
            "mcp": {
                "servers": {
                    "hi": INPROC,
                    "kid": {
                        "transport": "stdio",
                        "command": [sys.executable, FIXTURE_SERVER],
                        "connect_timeout_ms": 8000,
                    },
                    "lz": {**INPROC, "start": "lazy"},
                }
            },
        }
    )


async def test_after_start_every_engine_task_is_named_and_after_stop_none_is_left() -> None:
    before = asyncio.all_tasks()
    engine = Engine(_settings())
    await engine.start()
    try:
        assert {s["id"]: s["state"] for s in engine.server_status()["servers"]}["kid"] == "up"
        ours = asyncio.all_tasks() - before
        unnamed = sorted(repr(t.get_coro()) for t in ours if UNNAMED.match(t.get_name()))
        assert unnamed == [], f"tasks without a name: {unnamed}"
        names = engine.tasks.names()
        assert {"mcp:hi", "mcp:kid", "mcp:lazy-start", "mcp-endpoint"} <= set(names), names
    finally:
        await engine.stop()
    left = sorted(t.get_name() for t in asyncio.all_tasks() - before)
    assert left == [], f"engine tasks still running after stop: {left}"
    assert len(engine.tasks) == 0


async def test_a_failing_background_task_is_reported_and_the_engine_stays_up() -> None:
    # recording off: the flight recorder's own tasks would be listed beside the test's
    engine = Engine(Settings.model_validate({"engine": {"http": {"enabled": False}}, "recording": {"enabled": False}}))
    await engine.start()
    sub = engine.bus.subscribe(types={EngineError.type})

    async def boom() -> None:
        raise RuntimeError("kaput")

    task = engine.spawn(boom(), name="test:boom")
    await asyncio.wait({task})
    await asyncio.sleep(0)  # the group's done callback
    event = sub.get_nowait()
    assert isinstance(event, EngineError) and "test:boom" in event.message and "kaput" in event.message
    assert engine.tasks.failures == 1
    hang = engine.spawn(asyncio.sleep(3600), name="test:hang")
    # the store's pump and heartbeat run in every engine (engine.store: memory by default)
    assert engine.started and [n for n in engine.tasks.names() if not n.startswith("store:")] == ["test:hang"]
    await engine.stop()
    assert hang.cancelled()
    with pytest.raises(TaskGroupClosed, match="test:late"):
        engine.spawn(asyncio.sleep(0), name="test:late")


async def test_a_task_needs_a_name() -> None:
    group = EngineTasks()
    with pytest.raises(ValueError, match="name"):
        group.spawn(asyncio.sleep(0), name="")
    await group.close()


@pytest.mark.parametrize("part", [BudgetLayer, McpHost, McpEndpoint, CallManager])
def test_parts_are_built_from_narrow_dependencies_not_the_engine(part: type) -> None:
    params = inspect.signature(part).parameters
    assert "engine" not in params, f"{part.__name__} still takes the whole Engine"
    assert not any("Engine" == str(p.annotation) for p in params.values())


class RecordingTiers:
    """A fake ``CallTiers``: what the budget layer reads and the tier changes it asks for."""

    default_tier = "auto"
    waiting_callers = 0

    def __init__(self) -> None:
        self.set: list[tuple[str, str, str]] = []

    def set_call_tier(self, session: CallSession, tier: str, reason: str) -> None:
        self.set.append((session.call_id, tier, reason))
        session.tier = tier


async def _no_probe(exposed_name: str, args: Mapping[str, Any]) -> ToolResult:
    raise AssertionError("no probe expected")


async def test_budget_layer_sets_tiers_through_the_call_tiers_protocol(tmp_path: Path) -> None:
    settings = settings_for(tmp_path, [])
    tiers = RecordingTiers()
    group = EngineTasks()
    services = Services(lambda: settings, EventBus(), Metrics(), group.spawn)
    layer = BudgetLayer(services, registry=ToolRegistry(), tiers=tiers, probe=_no_probe)
    session = CallSession(call_id="c-1", context="c", provider="p", tier="standard")
    layer.before_turn(session, "think carefully about this")
    layer.after_turn(session)
    assert tiers.set == [("c-1", "deep", tiers.set[0][2])] and "deep" in tiers.set[0][2]
    await group.close()


def test_engine_plugs_the_budget_layer_into_its_declared_seams() -> None:
    engine = Engine(Settings.model_validate({"engine": {"http": {"enabled": False}}}))
    assert engine.executor.hooks is engine.budget
    assert engine.views.tier_filter is engine.budget.board
    assert engine.turn_hooks[0] is engine.budget  # then the turn-timing book (turn.timings for the waterfall)
    assert [type(h).__name__ for h in engine.turn_hooks[1:]] == ["TurnTimingBook"]
    assert not hasattr(engine.budget, "engine")


async def test_engine_reload_publishes_config_reloaded_once() -> None:
    old = Settings.model_validate(
        {"engine": {"http": {"enabled": False}}, "mcp": {"servers": {"a": {**INPROC, "enabled": False}}}}
    )
    engine = Engine(old)
    await engine.start()
    try:
        sub = engine.bus.subscribe(types={ConfigReloaded.type})
        new = Settings.model_validate(
            {"engine": {"http": {"enabled": False}}, "mcp": {"servers": {"b": {**INPROC, "enabled": False}}}}
        )
        await engine.reload(new)
        events = sub.drain()
        assert len(events) == 1 and isinstance(events[0], ConfigReloaded)
        assert (events[0].added, events[0].removed, events[0].error) == (("b",), ("a",), None)
    finally:
        await engine.stop()


class RefusesToStart:
    """A component whose start fails after the MCP host has started its servers and watcher."""

    name = "refuses"

    async def start(self) -> None:
        raise RuntimeError("cannot start")

    async def stop(self) -> None:
        return None

    async def reload(self, old: Settings, new: Settings) -> None:
        return None


async def test_a_failed_start_leaves_no_task_of_the_engine_running() -> None:
    before = asyncio.all_tasks()
    engine = Engine(
        Settings.model_validate(
            {
                "engine": {"http": {"enabled": False}},
                "mcp": {"servers": {"hi": INPROC, "lz": {**INPROC, "start": "lazy"}}},
            }
        )
    )
    engine.components.append(RefusesToStart())
    with pytest.raises(RuntimeError, match="cannot start"):
        await engine.start()
    assert not engine.started and engine.tasks.names() == []
    left = sorted(t.get_name() for t in asyncio.all_tasks() - before)
    assert left == [], f"engine tasks still running after a failed start: {left}"
