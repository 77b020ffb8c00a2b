"""The tool approval queue (engine.tools.approvals) through the one execution path: a tool that needs approval runs
once when approved and never otherwise (denied, timed out, call ended, nobody attached), and a server's
annotations only ever add caution."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from engine import ApprovalError
from engine.app import Engine
from engine.config import ConfigError, load_settings_text
from engine.config.models import Settings
from engine.events import AnnouncementRequested, Event, ToolApprovalRequested, ToolApprovalResolved
from engine.events.bus import Subscription
from engine.sessions.session import CallSession
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolParameter, ToolResult
from tests.engine.core.helpers import settings_with

DELETE_INTENT = {
    "name": "delete",
    "patterns": [r"delete (?P<name>\w+)"],
    "tools": [{"name": "delete_note", "args": {"name": "{name}"}}],
    "reply": "{result}",
}


class Counting:
    """A tool that counts its runs."""

    def __init__(self, name: str = "delete_note", annotations: Mapping[str, Any] | None = None) -> None:
        self.runs: list[dict[str, Any]] = []
        d = ToolDefinition(
            name=name,
            description="Delete a note.",
            parameters=(ToolParameter("name", "string", "which note", required=True),),
            annotations=annotations,
        )
        self.tool = FunctionTool(d, self._run)

    async def _run(self, args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        self.runs.append(args)
        return ToolResult.success(f"deleted {args['name']}")


def make(
    tmp_path: Path, tool: Counting, approve: list[str] | None = None, timeout_ms: int = 60_000
) -> tuple[Engine, CallSession]:
    settings = settings_with(tmp_path, [DELETE_INTENT], [tool.tool.definition.name])
    ctx = settings.contexts["c"].model_copy(update={"approve": approve or []})
    engine_cfg = settings.engine.model_copy(
        update={"approvals": settings.engine.approvals.model_copy(update={"timeout_ms": timeout_ms})}
    )
    settings = settings.model_copy(update={"contexts": {"c": ctx}, "engine": engine_cfg})
    engine = Engine(settings, extra_tools=[tool.tool])
    session = CallSession(call_id="call-a", context="c", provider="s")
    session.shown_tools = frozenset({tool.tool.definition.name})
    return engine, session


async def next_of(sub: Subscription, kind: type[Event]) -> Any:
    while True:
        ev = await asyncio.wait_for(sub.get(), 30)
        if isinstance(ev, kind):
            return ev


def run(engine: Engine, session: CallSession, name: str = "delete_note") -> asyncio.Task[ToolResult]:
    return asyncio.create_task(engine.execute_tool(session, name, {"name": "shopping"}, tool_call_id="tc-1"))


async def test_approved_runs_once(tmp_path: Path) -> None:
    tool = Counting()
    engine, session = make(tmp_path, tool, approve=["delete_note"])
    engine.attach_approver("test")
    sub = engine.bus.subscribe()
    task = run(engine, session)
    req = await next_of(sub, ToolApprovalRequested)
    assert (req.call_id, req.tool_call_id, req.exposed_name, req.server) == ("call-a", "tc-1", "delete_note", "builtin")
    assert req.arguments == {"name": "shopping"} and "approve" in req.reason
    assert req.deadline > req.ts and req.timeout_s == 60
    assert [p.approval_id for p in engine.pending_approvals()] == [req.approval_id]
    assert tool.runs == []  # waiting: nothing of the tool ran yet
    engine.approve_tool(req.approval_id, by="ada")
    result = await task
    assert (result.status, result.message) == ("success", "deleted shopping")
    assert tool.runs == [{"name": "shopping"}]
    types = [e.type for e in sub.drain()]
    assert types[:2] == ["announcement.requested", "tool.approval_resolved"]
    assert types[2:] == ["tool.requested", "tool.completed"]
    assert engine.pending_approvals() == []
    with pytest.raises(ApprovalError, match="no longer pending: it was approved"):
        engine.approve_tool(req.approval_id)
    assert 'ai_agent_tool_approvals_total{outcome="approved"} 1.0' in engine.metrics.render().decode()


async def test_the_caller_hears_one_moment_while_it_waits(tmp_path: Path) -> None:
    tool = Counting()
    engine, session = make(tmp_path, tool, approve=["delete_note"])
    engine.attach_approver("test")
    sub = engine.bus.subscribe(types={"announcement.requested", ToolApprovalRequested.type})
    task = run(engine, session)
    req = await next_of(sub, ToolApprovalRequested)
    said = await asyncio.wait_for(sub.get(), 30)
    assert isinstance(said, AnnouncementRequested)
    assert (said.type, said.call_id, said.text, said.reason) == (
        "announcement.requested",
        "call-a",
        "One moment, please.",
        "approval",
    )
    engine.deny_tool(req.approval_id)
    await task


async def test_denied_never_runs_and_the_model_hears_why(tmp_path: Path) -> None:
    tool = Counting()
    engine, session = make(tmp_path, tool, approve=["delete_note"])
    engine.attach_approver("test")
    sub = engine.bus.subscribe()
    task = run(engine, session)
    req = await next_of(sub, ToolApprovalRequested)
    engine.deny_tool(req.approval_id, "not on a Sunday")
    result = await task
    assert result.status == "rejected"
    assert result.message == "not approved: the operator did not approve delete_note: not on a Sunday. It was not run."
    assert tool.runs == []
    done = await next_of(sub, ToolApprovalResolved)
    assert (done.outcome, done.by, done.reason) == ("denied", "operator", "not on a Sunday")
    rest = [e.type for e in sub.drain()]
    assert rest == ["tool.rejected"] and "tool.requested" not in rest


async def test_timeout_is_a_denial(tmp_path: Path) -> None:
    tool = Counting()
    engine, session = make(tmp_path, tool, approve=["delete_note"], timeout_ms=50)
    engine.attach_approver("test")
    sub = engine.bus.subscribe(types={ToolApprovalResolved.type})
    result = await run(engine, session)
    assert result.status == "rejected"
    assert result.message == (
        "not approved: the operator did not approve delete_note within 0.05 seconds, so it was not run."
    )
    assert tool.runs == []
    done = await next_of(sub, ToolApprovalResolved)
    assert (done.outcome, done.by) == ("timed_out", "timeout")
    with pytest.raises(ApprovalError, match="it was timed out"):
        engine.approve_tool(done.approval_id)


async def test_no_approver_attached_denies_at_once(tmp_path: Path) -> None:
    tool = Counting()
    engine, session = make(tmp_path, tool, approve=["delete_note"])
    sub = engine.bus.subscribe(types={ToolApprovalRequested.type, ToolApprovalResolved.type})
    result = await run(engine, session)
    assert result.status == "rejected" and "no operator is attached to approve it" in result.message
    assert tool.runs == []
    assert [(e.type, getattr(e, "outcome", "")) for e in sub.drain()] == [
        ("tool.approval_requested", ""),
        ("tool.approval_resolved", "denied"),
    ]


async def test_the_last_approver_leaving_denies_what_waits(tmp_path: Path) -> None:
    tool = Counting()
    engine, session = make(tmp_path, tool, approve=["delete_note"])
    detach = engine.attach_approver("console")
    sub = engine.bus.subscribe()
    task = run(engine, session)
    await next_of(sub, ToolApprovalRequested)
    detach()
    result = await task
    assert result.status == "rejected" and "the approver (console) left" in result.message
    assert tool.runs == []


async def test_ending_the_call_cancels_its_pending_approvals(tmp_path: Path) -> None:
    """Through a real call: the scripted model asks for the tool, the operator ends the call meanwhile."""
    tool = Counting()
    settings = settings_with(tmp_path, [DELETE_INTENT], ["delete_note"])
    ctx = settings.contexts["c"].model_copy(update={"approve": ["delete_note"]})
    engine = Engine(settings.model_copy(update={"contexts": {"c": ctx}}), extra_tools=[tool.tool])
    engine.attach_approver("test")
    sub = engine.bus.subscribe()
    call = await engine.start_call("c")
    turn = asyncio.create_task(engine.user_said(call.call_id, "delete shopping"))
    req = await next_of(sub, ToolApprovalRequested)
    assert req.call_id == call.call_id
    await engine.end_call(call.call_id, "caller hung up")
    done = await next_of(sub, ToolApprovalResolved)
    assert (done.approval_id, done.outcome, done.by, done.reason) == (
        req.approval_id,
        "cancelled",
        "engine",
        "the call ended",
    )
    await asyncio.gather(turn, return_exceptions=True)
    assert tool.runs == [] and engine.pending_approvals() == []
    with pytest.raises(ApprovalError, match="no longer pending: it was cancelled"):
        engine.approve_tool(req.approval_id)


async def test_call_end_hook_resolves_a_wait_outside_the_turn(tmp_path: Path) -> None:
    """A tool call not run by the turn task (a realtime adapter's own task) still ends with its call."""
    tool = Counting()
    engine, session = make(tmp_path, tool, approve=["delete_note"])
    engine.attach_approver("test")
    sub = engine.bus.subscribe()
    task = run(engine, session)
    await next_of(sub, ToolApprovalRequested)
    engine.executor.approvals.call_ended(session)
    result = await task
    assert result.status == "rejected" and "the call ended" in result.message and tool.runs == []


async def test_destructive_hint_asks_for_approval(tmp_path: Path) -> None:
    tool = Counting(annotations={"destructiveHint": True})
    engine, session = make(tmp_path, tool)
    engine.attach_approver("test")
    sub = engine.bus.subscribe()
    task = run(engine, session)
    req = await next_of(sub, ToolApprovalRequested)
    assert req.reason == "the server 'builtin' declares it destructive"
    engine.approve_tool(req.approval_id)
    assert (await task).status == "success" and len(tool.runs) == 1


@pytest.mark.parametrize(
    "annotations",
    [{"destructiveHint": False}, {"readOnlyHint": True}, {"readOnlyHint": True, "destructiveHint": False}],
)
async def test_annotations_cannot_remove_an_approval_the_config_asks_for(
    tmp_path: Path, annotations: dict[str, bool]
) -> None:
    tool = Counting(annotations=annotations)
    engine, session = make(tmp_path, tool, approve=["delete_*"])
    engine.attach_approver("test")
    sub = engine.bus.subscribe()
    task = run(engine, session)
    req = await next_of(sub, ToolApprovalRequested)
    assert req.reason == "the context 'c' lists it under approve"
    assert tool.runs == []
    engine.deny_tool(req.approval_id)
    assert (await task).status == "rejected" and tool.runs == []


async def test_read_only_hint_makes_destructive_hint_meaningless(tmp_path: Path) -> None:
    tool = Counting(annotations={"readOnlyHint": True, "destructiveHint": True})
    engine, session = make(tmp_path, tool)
    engine.attach_approver("test")
    sub = engine.bus.subscribe(types={ToolApprovalRequested.type})
    assert (await run(engine, session)).status == "success"
    assert tool.runs == [{"name": "shopping"}] and sub.drain() == []


async def test_the_operators_own_call_is_its_approval(tmp_path: Path) -> None:
    tool = Counting(annotations={"destructiveHint": True})
    engine, session = make(tmp_path, tool, approve=["delete_note"])
    sub = engine.bus.subscribe(types={ToolApprovalRequested.type})
    result = await engine.executor.execute(session, "delete_note", {"name": "x"}, approved_by="operator")
    assert result.status == "success" and len(tool.runs) == 1 and sub.drain() == []


async def test_arguments_are_masked_in_the_request(tmp_path: Path) -> None:
    tool = Counting()
    engine, session = make(tmp_path, tool, approve=["delete_note"])
    engine.redactor.update({"sk-very-secret-value-123"})
    engine.attach_approver("test")
    sub = engine.bus.subscribe()
    task = asyncio.create_task(engine.execute_tool(session, "delete_note", {"name": "sk-very-secret-value-123"}))
    req = await next_of(sub, ToolApprovalRequested)
    assert "sk-very-secret-value-123" not in repr(req.arguments)
    assert "sk-very-secret-value-123" not in repr(engine.pending_approvals())
    engine.deny_tool(req.approval_id)
    await task


async def test_unknown_approval_is_a_clear_error(tmp_path: Path) -> None:
    engine, _ = make(tmp_path, Counting())
    with pytest.raises(ApprovalError, match=r"no pending approval 'ap-99' \(pending: none\)"):
        engine.deny_tool("ap-99")


BASE = """providers:
  s: {type: scripted, script: s.yaml}
contexts:
  c:
    provider: s
    tools: [mcp_notes_*, hangup_call]
"""


@pytest.mark.parametrize(
    ("approve", "message"),
    [
        ("[mcp_note_delete]", "'mcp_note_delete' is not among this context's tools (mcp_notes_*, hangup_call)"),
        ("[Delete]", "'Delete' is not an exposed tool name or pattern"),
    ],
)
def test_approve_entries_are_checked_against_the_contexts_tools(approve: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_settings_text(BASE + f"    approve: {approve}\n", "my.yaml")
    text = str(e.value)
    assert "my.yaml:7" in text and "contexts.c.approve" in text and message in text


@pytest.mark.parametrize("approve", ["[mcp_notes_delete]", "[mcp_notes_del*]", "[mcp_notes_*]", "[hangup_call]"])
def test_approve_entries_within_the_tools_are_accepted(approve: str) -> None:
    settings: Settings = load_settings_text(BASE + f"    approve: {approve}\n", "my.yaml")
    assert settings.contexts["c"].approve


async def test_concurrent_calls_are_answered_one_by_one(tmp_path: Path) -> None:
    """Two calls of one model turn wait side by side; each answer reaches its own call, and ending one call
    cancels only that call's approvals."""
    tool = Counting()
    engine, session = make(tmp_path, tool, approve=["delete_note"])
    other = CallSession(call_id="call-b", context="c", provider="s")
    other.shown_tools = session.shown_tools
    engine.attach_approver("test")
    sub = engine.bus.subscribe(types={ToolApprovalRequested.type})
    both = asyncio.create_task(
        engine.executor.execute_many(
            session, [("delete_note", {"name": "a"}, "t1"), ("delete_note", {"name": "b"}, "t2")]
        )
    )
    third = asyncio.create_task(engine.execute_tool(other, "delete_note", {"name": "c"}))
    reqs = {}
    for _ in range(3):
        r = await next_of(sub, ToolApprovalRequested)
        reqs[(r.call_id, r.arguments["name"])] = r.approval_id
    engine.executor.approvals.call_ended(other)
    assert (await third).status == "rejected"
    engine.deny_tool(reqs[("call-a", "a")])
    engine.approve_tool(reqs[("call-a", "b")])
    results = await both
    assert [r.status for r in results] == ["rejected", "success"]
    assert tool.runs == [{"name": "b"}]


async def test_calibration_never_probes_a_tool_that_needs_approval(tmp_path: Path) -> None:
    """Nobody approves a probe: a destructive tool, or one any context lists under approve, is never probed."""
    destructive = Counting(annotations={"destructiveHint": True})
    engine, _ = make(tmp_path, destructive)
    engine.attach_approver("test")
    sub = engine.bus.subscribe(types={ToolApprovalRequested.type})
    r = await engine.run_probe("delete_note", {"name": "x"})
    assert (r.status, r.message) == (
        "rejected",
        "not probed: delete_note needs the operator's approval (the server 'builtin' declares it destructive)",
    )
    listed = Counting()
    engine, _ = make(tmp_path, listed, approve=["delete_note"])
    r = await engine.run_probe("delete_note", {"name": "x"})
    assert r.status == "rejected" and "(the context 'c' lists it under approve)" in r.message
    assert destructive.runs == [] and listed.runs == [] and sub.drain() == []
    harmless = Counting(annotations={"readOnlyHint": True, "destructiveHint": True})
    engine, _ = make(tmp_path, harmless)
    assert (await engine.run_probe("delete_note", {"name": "x"})).status == "success"
