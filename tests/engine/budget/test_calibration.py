"""Calibration: idempotent tools only, arguments from config, _meta or the schema, probes marked, and a tool with
required arguments calibrated into FAST instead of being demoted (Glyphoxa's ``{}`` probe bug)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from engine.budget.calibration import CalibrationError, calibrate_server
from engine.events import ToolCompleted, ToolRequested
from engine.tools.base import ToolParameter, ToolResult
from tests.engine.budget.helpers import FakeClock, engine_for, settings_for, tool

SERVER = "fakesrv"
METAR_PARAMS = (
    ToolParameter("icao", "string", required=True, pattern="^[A-Z]{4}$"),
    ToolParameter("kind", "string", required=True, enum=("metar", "taf")),
    ToolParameter("hours", "integer", required=True, minimum=1, maximum=24),
    ToolParameter("verbose", "boolean"),
)


def server_cfg(calibrate: bool = True, tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "servers": {
            SERVER: {
                "transport": "stdio",
                "command": ["unused"],
                "calibrate": calibrate,
                "start": "lazy",
                "tools": tools or [],
            }
        }
    }


async def test_required_arguments_calibrate_into_fast(tmp_path: Path) -> None:
    runs: list[dict[str, Any]] = []
    metar = tool(
        "mcp_fakesrv_metar", server=SERVER, idempotent=True, params=METAR_PARAMS, calls=runs, origin_name="metar"
    )
    engine = engine_for(settings_for(tmp_path, ["mcp_fakesrv_metar"], mcp=server_cfg()), metar, clock=FakeClock())
    before = engine.budget.status("mcp_fakesrv_metar")
    assert before is not None and before.tier == "standard"  # no latency declared: STANDARD until measured
    sub = engine.bus.subscribe(types={"tool.requested", "tool.completed"})
    report = await calibrate_server(engine.budget, SERVER)
    row = report["tools"][0]
    assert row["result"] == "calibrated" and row["args_source"] == "generated from schema"
    assert row["args"] == {"icao": "AAAA", "kind": "metar", "hours": 1}
    assert row["outcomes"] == {"success": 5} and (row["tier"], row["health"]) == ("fast", "healthy")
    assert len(runs) == 5 and all(r["is_probe"] for r in runs)
    evs = sub.drain()
    assert len(evs) == 10 and all(isinstance(e, ToolRequested | ToolCompleted) and e.is_probe for e in evs)
    assert [t.name for t in engine.context_view("c", "fast").tools] == ["mcp_fakesrv_metar"]
    assert report["environment"] == "local"


async def test_error_answers_to_generated_arguments_do_not_demote(tmp_path: Path) -> None:
    picky = tool(
        "mcp_fakesrv_lookup",
        server=SERVER,
        idempotent=True,
        mx=300,
        params=(ToolParameter("city", "string", required=True),),
        outcome=lambda a: ToolResult.error(f"no city called {a['city']}"),
    )
    engine = engine_for(settings_for(tmp_path, [], mcp=server_cfg()), picky, clock=FakeClock())
    row = (await calibrate_server(engine.budget, SERVER))["tools"][0]
    assert row["outcomes"] == {"error": 5} and (row["tier"], row["health"]) == ("fast", "healthy")


async def test_declared_examples_win_and_their_errors_count(tmp_path: Path) -> None:
    runs: list[dict[str, Any]] = []
    cfg = server_cfg(tools=[{"name": "metar", "probe_args": {"icao": "EGLL", "kind": "taf", "hours": 6}}])
    metar = tool(
        "mcp_fakesrv_metar", server=SERVER, idempotent=True, params=METAR_PARAMS, calls=runs, origin_name="metar"
    )
    meta_tool = tool(
        "mcp_fakesrv_atis",
        server=SERVER,
        idempotent=True,
        mx=100,
        origin_name="atis",
        params=(ToolParameter("icao", "string", required=True),),
        outcome=lambda a: ToolResult.error("closed"),
    )
    meta_tool.probe_args = {"icao": "KSFO"}  # type: ignore[attr-defined]  # as MCPTool carries _meta.probe_args
    engine = engine_for(settings_for(tmp_path, [], mcp=cfg), metar, meta_tool, clock=FakeClock())
    report = await calibrate_server(engine.budget, SERVER, probes=5)
    rows = {r["name"]: r for r in report["tools"]}
    assert rows["metar"]["args"] == {"icao": "EGLL", "kind": "taf", "hours": 6}
    assert rows["metar"]["args_source"] == "config probe_args"
    assert rows["atis"]["args_source"] == "_meta.probe_args"
    assert rows["atis"]["health"] == "unhealthy"  # a declared example that fails is the tool's fault


async def test_non_idempotent_tools_are_never_probed(tmp_path: Path) -> None:
    runs: list[dict[str, Any]] = []
    send = tool("mcp_fakesrv_send", server=SERVER, idempotent=False, calls=runs, origin_name="send")
    bad_cfg = server_cfg(tools=[{"name": "odd", "probe_args": {"n": "not a number"}}])
    odd = tool(
        "mcp_fakesrv_odd",
        server=SERVER,
        idempotent=True,
        origin_name="odd",
        params=(ToolParameter("n", "integer", required=True),),
        calls=runs,
    )
    engine = engine_for(settings_for(tmp_path, [], mcp=bad_cfg), send, odd, clock=FakeClock())
    report = await calibrate_server(engine.budget, SERVER)
    rows = {r["name"]: r for r in report["tools"]}
    assert rows["send"] == {
        "name": "send",
        "exposed_name": "mcp_fakesrv_send",
        "result": "skipped",
        "reason": "not idempotent: never probed",
    }
    assert rows["odd"]["result"] == "skipped" and "do not fit the schema" in rows["odd"]["reason"]
    assert runs == [] and (report["calibrated"], report["skipped"]) == (0, 2)


async def test_a_timeout_ends_probing_and_counts(tmp_path: Path) -> None:
    runs: list[dict[str, Any]] = []
    hang = tool("mcp_fakesrv_hang", server=SERVER, idempotent=True, mx=20, delay=5, calls=runs)
    engine = engine_for(settings_for(tmp_path, [], mcp=server_cfg()), hang, clock=FakeClock())
    row = (await calibrate_server(engine.budget, SERVER))["tools"][0]
    assert row["outcomes"] == {"timeout": 1} and len(runs) == 1


async def test_unknown_server_and_the_server_up_hook(tmp_path: Path) -> None:
    quick = tool("mcp_fakesrv_quick", server=SERVER, idempotent=True)
    engine = engine_for(settings_for(tmp_path, [], mcp=server_cfg()), quick, clock=FakeClock())
    with pytest.raises(CalibrationError, match=r"'nosuch' has no registered tools .*servers with tools: fakesrv"):
        await calibrate_server(engine.budget, "nosuch")
    task = engine.budget.on_server_up(SERVER)
    assert task is not None
    report = await task
    assert engine.budget.last_calibration[SERVER] is report and report["calibrated"] == 1
    assert 'ai_agent_budget_probes_total{server="fakesrv",status="success",tool="mcp_fakesrv_quick"} 5.0' in (
        engine.metrics.render().decode()
    )
    assert engine.budget.on_server_up("unconfigured") is None


async def test_server_without_calibrate_is_not_probed_on_connect(tmp_path: Path) -> None:
    engine = engine_for(
        settings_for(tmp_path, [], mcp=server_cfg(calibrate=False)),
        tool("mcp_fakesrv_q", server=SERVER, idempotent=True),
    )
    assert engine.budget.on_server_up(SERVER) is None
