"""Tool annotations as policy (issue 18 item 2): calibration probes only tools read-only or idempotent by
annotation or config and never a destructive one; results are cached only for read-only (or configured) tools;
annotations only ever add caution."""

from __future__ import annotations

import sys
from typing import Any

from engine.config.models import McpToolConfig
from engine.mcp.policy import cache_seconds, probe_refusal
from tests.engine.mcp.helpers import FIXTURES, settings
from tests.engine.mcp.test_real_peers import call

STRUCTURED = str(FIXTURES / "structured_server.py")


def _cfg(tools: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        "transport": "stdio",
        "command": [sys.executable, STRUCTURED],
        "connect_timeout_ms": 8000,
        "tools": tools or [],
        "expose_unlisted": True,
    }


async def test_calibration_follows_the_annotations(make_engine: Any) -> None:
    tools = [{"name": "wipe", "idempotent": True}, {"name": "lookup", "idempotent": False}]
    engine = await make_engine(settings({"st": _cfg(tools)}))
    report = await engine.calibrate("st", probes=1)
    rows = {r["name"]: r for r in report["tools"]}
    assert rows["wipe"]["reason"] == "annotated destructive (destructiveHint): never probed"  # config can't undo it
    assert rows["lookup"]["reason"] == "configured idempotent: false: never probed"  # nor an annotation the config
    assert rows["setter"]["result"] == "calibrated"  # idempotentHint with destructiveHint: false
    assert rows["weather"]["result"] == "calibrated"  # readOnlyHint
    assert rows["plain"]["result"] == "calibrated"  # _meta idempotent, as before
    assert rows["halfway"]["reason"] == "not read-only or idempotent (by annotation or config): never probed"


async def test_results_are_cached_only_for_read_only_or_configured_tools(make_engine: Any) -> None:
    tools = [{"name": "setter", "idempotent": True, "cacheable_seconds": 60}, {"name": "wipe", "cacheable_seconds": 60}]
    engine = await make_engine(settings({"st": _cfg(tools)}))
    hits = {}
    for name in ("lookup", "plain", "setter", "wipe"):
        await call(engine, f"mcp_st_{name}", {})
        hits[name] = (await call(engine, f"mcp_st_{name}", {})).cache_hit
    assert hits == {"lookup": True, "plain": False, "setter": True, "wipe": False}
    warnings = engine.server_status()["servers"][0]["warnings"]
    assert any(w.startswith("tool 'plain': _meta.cacheable_seconds ignored: only read-only") for w in warnings)
    assert "tool 'wipe': annotated destructive (destructiveHint): its results are never cached" in warnings


def test_policy_rules() -> None:
    no = McpToolConfig(name="t", idempotent=False)
    assert probe_refusal({"readOnlyHint": True, "destructiveHint": True}, None, False) is None  # read-only wins
    assert probe_refusal({"idempotentHint": True}, None, False) is not None  # destructive by default
    assert probe_refusal({"readOnlyHint": True}, no, False) == "configured idempotent: false: never probed"
    assert probe_refusal({}, None, True) is None
    assert cache_seconds("t", {}, None, 0) == (0, None)
    assert cache_seconds("t", {"readOnlyHint": True}, None, 30) == (30, None)
    assert cache_seconds("t", {}, McpToolConfig(name="t", cacheable_seconds=30), 30) == (30, None)
    assert cache_seconds("t", {"readOnlyHint": "yes"}, None, 30)[0] == 0  # not a boolean: no hint
