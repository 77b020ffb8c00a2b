"""Audit finding 1 (issue #14 §4): OpenAI strict mode renders a schema exactly within the subset or not at all.

Nulls the model sends for optional fields are removed under ``$ref``, ``allOf``, a root ``$ref`` and in arrays
of objects; a schema with keywords outside the documented subset, deeper than 10 levels, with more than 1,000
enum values, or a free-form / ``patternProperties`` map goes non-strict (unchanged), and ``tools --json`` says
why. The OpenAI fakes enforce the server's strict rules (tests/fixtures/fake_providers/openai_rules.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai_rules
import pytest
from audit_harness import audit_engine, ava_engine
from fakebase import Reply
from fakes import FAKES

from engine.providers.rendering import render_tools
from engine.providers.rendering.strict import strip_added_nulls
from engine.sessions.history import ToolResultItem
from tests.fixtures.mcp_servers.schema_server import NOT_STRICTABLE, STRICT_CALLS, STRICTABLE

OPENAI = ["openai_chat", "openai_responses"]


def _decls(schemas: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": n, "description": n, "input_schema": s} for n, s in schemas.items()]


def _fn(provider_type: str, tool: dict[str, Any]) -> dict[str, Any]:
    return tool["function"] if provider_type == "openai_chat" else tool


@pytest.mark.parametrize("provider_type", OPENAI)
async def test_nulls_for_optional_fields_are_stripped_end_to_end(provider_type: str) -> None:
    """The model answers each strict tool with null for the optional fields; every tool gets clean arguments."""
    names = sorted(STRICT_CALLS)
    steps = [Reply(calls=[(f"mcp_audit_{n}", STRICT_CALLS[n][0]) for n in names]), Reply(text="Done.")]
    fake = FAKES[provider_type](steps)
    async with fake:
        engine = audit_engine(fake, [f"mcp_audit_{n}" for n in names], strict_tools=True)
        async with engine:
            call = await engine.start_call("desk")
            reply = await engine.user_said(call.call_id, "go")
            results = [i for i in call.history.items() if isinstance(i, ToolResultItem)]
    assert fake.errors == [], fake.errors
    tools = {_fn(provider_type, t)["name"]: _fn(provider_type, t) for t in fake.requests[0]["tools"]}
    assert all(t["strict"] is True for t in tools.values()), "each of these schemas fits the strict subset"
    assert reply.text == "Done."
    assert [r.status for r in results] == ["success"] * len(names), [r.message for r in results]
    got = {r.name: r.data for r in results}  # the schema server echoes what the tool received (JSON text, parsed)
    for n in names:
        assert got[f"mcp_audit_{n}"] == STRICT_CALLS[n][1], n


def test_strip_follows_ref_allof_root_ref_and_array_items() -> None:
    for n, (sent, want) in STRICT_CALLS.items():
        assert strip_added_nulls(sent, STRICTABLE[n]) == want, n
    # A null the real schema allows stays.
    nullable = {
        "type": "object",
        "$defs": {"N": {"type": ["string", "null"]}},
        "properties": {"x": {"$ref": "#/$defs/N"}},
    }
    assert strip_added_nulls({"x": None}, nullable) == {"x": None}


@pytest.mark.parametrize("provider_type", OPENAI)
def test_schemas_outside_the_subset_go_non_strict_unchanged(provider_type: str) -> None:
    rendered = render_tools(provider_type, _decls({**NOT_STRICTABLE, **STRICTABLE}), strict=True)
    openai_rules.check_tools(rendered.tools, flat=provider_type == "openai_responses")  # what the server enforces
    by_name = {_fn(provider_type, t)["name"]: _fn(provider_type, t) for t in rendered.tools}
    assert set(rendered.non_strict) == set(NOT_STRICTABLE)
    for n in NOT_STRICTABLE:
        assert by_name[n]["strict"] is False and rendered.non_strict[n], n
    for n in STRICTABLE:
        assert by_name[n]["strict"] is True, n
    # Non-strict means the schema keeps its meaning: maps are not narrowed to {}.
    props = {n: by_name[n]["parameters"]["properties"] for n in ("free_form", "pattern_map", "typed_map")}
    assert props["free_form"]["attrs"] == {"type": "object"}
    assert props["pattern_map"]["tags"]["patternProperties"] == {"^x_": {"type": "string"}}
    assert props["typed_map"]["scores"]["additionalProperties"] == {"type": "number"}
    assert by_name["max_length"]["parameters"]["properties"]["code"]["maxLength"] == 8
    assert "nested deeper than 10" in rendered.non_strict["too_deep"]
    assert "1001 enum values" in rendered.non_strict["many_enums"]


async def test_fake_openai_accepts_the_fallback_tools_in_a_real_call() -> None:
    fake = FAKES["openai_chat"]([Reply(text="Fine.")])
    async with fake:
        engine = audit_engine(fake, ["mcp_audit_*"], strict_tools=True)
        async with engine:
            call = await engine.start_call("desk")
            reply = await engine.user_said(call.call_id, "hello")
    assert fake.errors == [] and reply.text == "Fine."


def test_tools_json_names_the_non_strict_tools(tmp_path: Path) -> None:
    out = ava_engine(tmp_path, "tools", "--context", "audit", "--provider", "openai_chat", "--strict")
    reasons = {row["name"]: row["reason"] for row in out["rendering"]["non_strict"]}
    assert set(reasons) == {f"mcp_audit_{n}" for n in NOT_STRICTABLE} | {"mcp_audit_bare_array"}
    assert "maxLength" in reasons["mcp_audit_max_length"] and "'uri'" in reasons["mcp_audit_format_uri"]
    assert "untyped" in reasons["mcp_audit_untyped"] and "patternProperties" in reasons["mcp_audit_pattern_map"]
    strict = {t["function"]["name"]: t["function"]["strict"] for t in out["tools"]}
    assert all(strict[f"mcp_audit_{n}"] for n in STRICTABLE)
    openai_rules.check_tools(out["tools"], flat=False)
