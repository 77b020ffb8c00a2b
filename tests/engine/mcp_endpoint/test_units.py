"""Small parts of the endpoint on their own: limits, token compare, allowed hosts, result mapping, config."""

from __future__ import annotations

import datetime as dt

import pydantic
import pytest
from mcp.types import TextContent

from engine.config.models import McpEndpointConfig
from engine.http.guard import bearer_ok
from engine.mcp_endpoint.component import security_settings
from engine.mcp_endpoint.limits import CallLimits
from engine.mcp_endpoint.results import report_progress, to_call_tool_result
from engine.tools.base import ToolResult


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0
        self.day = dt.date(2026, 1, 1)


def test_rate_window_rolls_and_refusals_consume_nothing() -> None:
    t = FakeTime()
    limits = CallLimits(clock=lambda: t.now, today=lambda: t.day)
    assert limits.admit(2, 100) is None
    t.now += 30
    assert limits.admit(2, 100) is None
    refused = limits.admit(2, 100)
    assert refused is not None and refused.reason == "rate_limit" and refused.retry_after_s == 30
    assert limits.used_today == 2
    t.now += 30  # the first call leaves the window
    assert limits.admit(2, 100) is None
    assert limits.admit(2, 100) is not None


def test_daily_budget_resets_on_a_new_utc_day() -> None:
    t = FakeTime()
    limits = CallLimits(clock=lambda: t.now, today=lambda: t.day)
    assert limits.admit(100, 2) is None and limits.admit(100, 2) is None
    refused = limits.admit(100, 2)
    assert refused is not None and refused.reason == "daily_budget" and refused.retry_after_s >= 1
    t.day += dt.timedelta(days=1)
    assert limits.used_today == 0
    assert limits.admit(100, 2) is None


@pytest.mark.parametrize(
    ("header", "ok"),
    [
        ("Bearer s3cret", True),
        ("bearer s3cret", True),
        ("Bearer  s3cret ", True),
        ("Bearer s3cre", False),
        ("Bearer s3cretX", False),
        ("Token s3cret", False),
        ("s3cret", False),
        ("", False),
        (None, False),
    ],
)
def test_bearer_compare(header: str | None, ok: bool) -> None:
    assert bearer_ok(header, "s3cret") is ok


def test_security_settings_cover_loopback_the_bind_host_and_extras() -> None:
    cfg = McpEndpointConfig(allowed_hosts=["agents.lan:*"], allowed_origins=["https://ui.example"])
    s = security_settings(cfg, "10.0.0.5")
    assert s.enable_dns_rebinding_protection is True
    for host in ("127.0.0.1:*", "localhost", "[::1]:*", "10.0.0.5:*", "agents.lan:*"):
        assert host in s.allowed_hosts
    for origin in ("http://localhost:*", "http://10.0.0.5:*", "https://ui.example"):
        assert origin in s.allowed_origins
    wildcard = security_settings(McpEndpointConfig(), "0.0.0.0")
    assert not any(h.startswith("0.0.0.0") for h in wildcard.allowed_hosts)


@pytest.mark.parametrize("status", ["success", "error", "timeout", "rejected"])
def test_result_mapping(status: str) -> None:
    r = to_call_tool_result(ToolResult(status, "Said.", {"k": [1, 2]}))  # type: ignore[arg-type]
    assert r.content == [TextContent(type="text", text="Said.")]
    assert r.structured_content == {"status": status, "message": "Said.", "data": {"k": [1, 2]}}
    assert r.is_error is (status != "success")


def test_non_json_data_becomes_strings() -> None:
    r = to_call_tool_result(ToolResult.success("ok", {"when": dt.date(2026, 5, 1)}))
    assert r.structured_content == {"status": "success", "message": "ok", "data": {"when": "2026-05-01"}}


async def test_report_progress_outside_the_endpoint_does_nothing() -> None:
    await report_progress(1, 2, "nobody listens")  # a tool run by a phone call: no MCP caller, no error


def test_config_rejects_timeouts_for_tools_that_are_not_exposed() -> None:
    with pytest.raises(pydantic.ValidationError) as err:
        McpEndpointConfig(expose=["a"], tool_timeouts_ms={"b": 100})
    assert "'b' is not in 'expose'" in str(err.value)
    with pytest.raises(pydantic.ValidationError):
        McpEndpointConfig(expose=["a"], tool_timeouts_ms={"a": 0})
    with pytest.raises(pydantic.ValidationError):
        McpEndpointConfig(path="mcp")
    assert McpEndpointConfig(expose=["a"], tool_timeouts_ms={"a": 5}).tool_timeouts_ms == {"a": 5}
