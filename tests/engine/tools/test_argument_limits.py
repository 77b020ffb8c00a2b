"""Bounded tool arguments: depth, size, string length checked before parsing, with a named error; echoes clipped;
rejected names counted under a bounded set of metric series."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from engine.app import Engine
from engine.config.models import Settings
from engine.sessions.session import CallSession
from engine.tools.limits import ArgumentLimits, LimitExceeded, check_text, check_value, clip
from engine.tools.validation import ArgumentError, parse_arguments
from tests.engine.core.helpers import echo_tool


def deep_text(levels: int) -> str:
    return '{"a": ' * levels + "1" + "}" * levels


def deep_value(levels: int) -> dict[str, Any]:
    root: dict[str, Any] = {}
    cur = root
    for _ in range(levels - 1):
        nxt: dict[str, Any] = {}
        cur["a"] = nxt
        cur = nxt
    return root


@pytest.mark.parametrize("levels", [1_000, 10_000, 100_000])
def test_deep_json_text_is_a_named_error_not_a_recursion_error(levels: int) -> None:
    with pytest.raises(ArgumentError, match=r"nested more than 64 levels deep \(limit 64\) at character 385"):
        parse_arguments(deep_text(levels))
    with pytest.raises(ArgumentError, match="nested more than 64 levels deep"):
        parse_arguments("[" * levels + "]" * levels)


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"s": "[{" * 5000, "t": '\\"[[[' * 100})
    assert parse_arguments(text)["s"] == "[{" * 5000


def test_exactly_at_the_depth_limit_is_accepted() -> None:
    assert parse_arguments(deep_text(64))
    assert parse_arguments(deep_value(64))
    with pytest.raises(ArgumentError):
        parse_arguments(deep_text(65))
    with pytest.raises(ArgumentError, match=r"nested more than 64 levels deep \(limit 64\) at \$\.a\.a"):
        parse_arguments(deep_value(65))


def test_deep_and_self_containing_mappings_are_refused_without_recursion() -> None:
    with pytest.raises(ArgumentError, match="nested more than 64 levels"):
        parse_arguments(deep_value(50_000))
    loop: dict[str, Any] = {"x": 1}
    loop["self"] = loop
    with pytest.raises(ArgumentError, match="nested more than 64 levels"):
        parse_arguments(loop)


def test_size_and_string_bounds() -> None:
    with pytest.raises(ArgumentError, match=r"arguments are 2,097,161 characters of JSON \(limit 1,048,576\)"):
        parse_arguments(json.dumps({"s": "x" * 2_097_152}))
    with pytest.raises(ArgumentError, match=r"a string of 70,000 characters \(limit 65,536\) at \$\.s"):
        parse_arguments(json.dumps({"s": "x" * 70_000}))
    with pytest.raises(ArgumentError, match=r"a string of 70,000 characters \(limit 65,536\) at \$\.s"):
        parse_arguments({"s": "x" * 70_000})
    with pytest.raises(ArgumentError, match=r"a key of 70,000 characters"):
        parse_arguments({"k" * 70_000: 1})
    with pytest.raises(ArgumentError, match="more than 1,048,576 characters of JSON"):
        parse_arguments({"list": ["y" * 60_000] * 20})
    assert parse_arguments({"s": "x" * 65_536})
    # Text within max_size is never refused for its size, however many small values it holds.
    text = json.dumps({"nums": [1] * 300_000, "s": "x" * 70_000})
    assert 900_000 < len(text) < 1_048_576
    with pytest.raises(ArgumentError, match=r"a string of 70,000 characters \(limit 65,536\) at \$\.s"):
        parse_arguments(text)
    assert len(parse_arguments(json.dumps({"nums": [1] * 300_000, "s": "x" * 60_000}))["nums"]) == 300_000


def test_non_json_numbers_are_named_errors() -> None:
    with pytest.raises(ArgumentError, match="not valid JSON: NaN is not a JSON number"):
        parse_arguments('{"a": NaN}')
    with pytest.raises(ArgumentError, match="not valid JSON: Infinity is not a JSON number"):
        parse_arguments('{"a": [Infinity]}')
    with pytest.raises(ArgumentError, match="not valid JSON: Exceeds the limit"):
        parse_arguments('{"a": 1' + "0" * 5000 + "}")
    with pytest.raises(ArgumentError, match=r"inf is not a JSON number at \$\.a\[0\]"):
        parse_arguments({"a": [float("inf")]})


def test_limits_are_configurable() -> None:
    tight = ArgumentLimits(max_depth=3, max_size=2000, max_string=20)
    with pytest.raises(LimitExceeded, match=r"limit 3"):
        check_text("[[[[" + "1" * 200 + "]]]]", tight)
    with pytest.raises(LimitExceeded, match=r"limit 20"):
        check_value({"a": "x" * 21}, tight)
    settings = Settings.model_validate({"engine": {"tool_arguments": {"max_depth": 8, "max_string": 100}}})
    assert settings.engine.tool_arguments.max_depth == 8
    assert Settings().engine.tool_arguments.max_size == 1_048_576


def test_clip() -> None:
    assert clip("short") == "short"
    assert clip("x" * 1_000_000) == "x" * 80 + "… (1,000,000 characters)"


def _engine() -> tuple[Engine, CallSession]:
    engine = Engine(
        Settings.model_validate({"engine": {"http": {"enabled": False}, "tool_arguments": {"max_depth": 16}}}),
        extra_tools=[echo_tool()],
    )
    session = CallSession(call_id="c1", context="c", provider="p")
    session.shown_tools = frozenset({"echo"})
    return engine, session


async def test_execute_tool_rejects_deep_arguments_with_the_configured_limit() -> None:
    engine, session = _engine()
    sub = engine.bus.subscribe()
    for args in (deep_text(5_000), deep_value(5_000), {"text": "x", "n": deep_value(20)}):
        r = await engine.execute_tool(session, "echo", args)
        assert r.status == "rejected", r
        assert r.message.startswith("invalid arguments for echo: nested more than 16 levels deep (limit 16)")
    assert [e.type for e in sub.drain()] == ["tool.rejected"] * 3


async def test_rejection_messages_and_events_clip_what_they_echo() -> None:
    engine, session = _engine()
    sub = engine.bus.subscribe()
    name = "n" * 1_048_576
    r = await engine.execute_tool(session, name, {})
    assert r.status == "rejected" and len(r.message) < 300
    assert "… (1,048,576 characters)" in r.message
    (ev,) = sub.drain()
    assert len(ev.exposed_name) < 200 and len(ev.reason) < 300  # type: ignore[attr-defined]

    many = {f"k{i}": "v" * 60_000 for i in range(10)}
    r = await engine.execute_tool(session, "echo", many)
    assert r.status == "rejected" and len(r.message) < 4_000, len(r.message)

    r = await engine.execute_tool(session, "echo", {"text": "t", **{f"{'z' * 50_000}{i}": 1 for i in range(15)}})
    assert r.status == "rejected" and len(r.message) < 4_000
    assert "and 5 more problems" in r.message and "… (50,001 characters)" in r.message


async def test_rejected_names_share_one_metric_series() -> None:
    engine, session = _engine()
    for i in range(500):
        await engine.execute_tool(session, f"bogus_{i}", {})
    await engine.execute_tool(session, "echo", {"text": 5})
    text = engine.metrics.render().decode()
    series = re.findall(r"^ai_agent_mcp_tool_rejections_total\{(.*)\} (\S+)$", text, re.M)
    assert sorted(series) == [
        ('reason="invalid arguments",tool="echo"', "1.0"),
        ('reason="not shown",tool="(unknown)"', "500.0"),
    ]


async def test_a_model_call_with_out_of_bounds_arguments_is_kept_in_history_safely() -> None:
    """The call is recorded before it runs; an object beyond the bounds must not poison the next request."""
    from engine.calls.manager import EngineGateway
    from engine.providers.base import ToolCallRequest
    from engine.providers.textloop import call_arguments_json
    from engine.sessions.history import ToolCallItem

    engine, session = _engine()
    gateway = EngineGateway(engine.executor, session)
    deep_text_call = deep_text(3_000)
    results = await gateway.call_tools(
        [ToolCallRequest("echo", deep_value(3_000)), ToolCallRequest("echo", deep_text_call)]
    )
    assert [r.status for r in results] == ["rejected", "rejected"]
    calls = [i for i in session.history.items() if isinstance(i, ToolCallItem)]
    assert [call_arguments_json(c) for c in calls] == ["", deep_text_call]  # the text as the model wrote it
