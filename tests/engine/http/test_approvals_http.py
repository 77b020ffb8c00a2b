"""The approval queue over the HTTP API (engine.http.approvals): a headless operator lists what waits and answers
it; answering needs the bearer token; without ``engine.approvals.http`` nothing waits for HTTP (denied at once)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from engine.app import Engine
from engine.config import ConfigError, load_settings_text
from engine.config.models import Settings
from engine.events import ToolApprovalRequested
from engine.events.bus import Subscription
from engine.sessions.session import CallSession
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolParameter, ToolResult
from tests.engine.http.helpers import AUTH, JSON, TOKEN, http_of, send


class Runs:
    def __init__(self) -> None:
        self.args: list[dict[str, Any]] = []
        d = ToolDefinition(
            "wipe_disk", "Wipe a disk.", parameters=(ToolParameter("disk", "string", "which", required=True),)
        )
        self.tool = FunctionTool(d, self.run)

    async def run(self, args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        self.args.append(args)
        return ToolResult.success("wiped")


async def started(tmp_path: Path, runs: Runs, http_approver: bool) -> Engine:
    (tmp_path / "s.yaml").write_text("greeting: hi\nfallback: what?\n")
    settings = Settings.model_validate(
        {
            "engine": {"http": {"port": 0, "auth_token": TOKEN}, "approvals": {"http": http_approver}},
            "providers": {"s": {"type": "scripted", "script": str(tmp_path / "s.yaml")}},
            "contexts": {"c": {"provider": "s", "tools": ["wipe_disk"], "approve": ["wipe_disk"]}},
        }
    )
    engine = Engine(settings, serve_http=True, extra_tools=[runs.tool])
    await engine.start()
    return engine


@pytest.fixture
async def engines() -> AsyncIterator[list[Engine]]:
    made: list[Engine] = []
    yield made
    for e in made:
        await e.stop()


async def next_request(sub: Subscription) -> ToolApprovalRequested:
    ev = await asyncio.wait_for(sub.get(), 30)
    assert isinstance(ev, ToolApprovalRequested)
    return ev


def call(engine: Engine) -> asyncio.Task[ToolResult]:
    session = CallSession(call_id="call-h", context="c", provider="s")
    session.shown_tools = frozenset({"wipe_disk"})
    return asyncio.create_task(engine.execute_tool(session, "wipe_disk", {"disk": "sda"}))


async def test_a_headless_operator_answers_over_http(tmp_path: Path, engines: list[Engine]) -> None:
    runs = Runs()
    engine = await started(tmp_path, runs, http_approver=True)
    engines.append(engine)
    base = str(http_of(engine).url)
    sub = engine.bus.subscribe(types={ToolApprovalRequested.type})
    task = call(engine)
    req = await next_request(sub)
    listed = await send("GET", f"{base}/approvals", headers=AUTH)
    assert listed.status == 200
    body = listed.json()
    assert body["approvers"] == ["http api"]
    assert [(a["approval_id"], a["exposed_name"], a["arguments"]) for a in body["approvals"]] == [
        (req.approval_id, "wipe_disk", {"disk": "sda"})
    ]
    no_token = await send("POST", f"{base}/approvals/{req.approval_id}/approve")
    assert no_token.status == 401 and runs.args == []
    bad = await send("POST", f"{base}/approvals/{req.approval_id}/deny", headers={**AUTH, **JSON}, data="[1]")
    assert bad.status == 400 and "JSON object" in bad.json()["error"]
    denied = await send(
        "POST",
        f"{base}/approvals/{req.approval_id}/deny",
        headers={**AUTH, **JSON},
        data=json.dumps({"reason": "wrong disk", "by": "night shift"}),
    )
    assert denied.status == 200 and denied.json()["outcome"] == "denied"
    result = await task
    assert result.status == "rejected" and "did not approve wipe_disk: wrong disk" in result.message
    assert runs.args == []
    again = await send("POST", f"{base}/approvals/{req.approval_id}/approve", headers=AUTH)
    assert again.status == 409 and "no longer pending: it was denied" in again.json()["error"]
    unknown = await send("POST", f"{base}/approvals/ap-999/approve", headers=AUTH)
    assert unknown.status == 404 and "no pending approval 'ap-999'" in unknown.json()["error"]
    task = call(engine)
    req = await next_request(sub)
    approved = await send("POST", f"{base}/approvals/{req.approval_id}/approve", headers=AUTH)
    assert approved.status == 200
    assert (await task).status == "success" and runs.args == [{"disk": "sda"}]


async def test_without_the_http_approver_nothing_waits(tmp_path: Path, engines: list[Engine]) -> None:
    runs = Runs()
    engine = await started(tmp_path, runs, http_approver=False)
    engines.append(engine)
    result = await call(engine)
    assert result.status == "rejected" and "no operator is attached" in result.message
    listed = await send("GET", f"{http_of(engine).url}/approvals", headers=AUTH)
    assert listed.json() == {"approvals": [], "approvers": []}


def test_the_http_approver_needs_a_token() -> None:
    with pytest.raises(ConfigError) as e:
        load_settings_text("engine:\n  approvals:\n    http: true\n", "serve.yaml")
    assert "serve.yaml:3" in str(e.value) and "engine.approvals.http" in str(e.value)
    assert "needs engine.http.auth_token" in str(e.value)


async def test_a_bad_answer_is_refused_before_anything_is_applied(tmp_path: Path, engines: list[Engine]) -> None:
    runs = Runs()
    engine = await started(tmp_path, runs, http_approver=True)
    engines.append(engine)
    base = str(http_of(engine).url)
    sub = engine.bus.subscribe(types={ToolApprovalRequested.type})
    task = call(engine)
    req = await next_request(sub)
    url = f"{base}/approvals/{req.approval_id}"
    # legal JSON, not valid text: it was applied, then the answer failed to encode (a 500 after the tool ran)
    for path, body, field, says in (
        ("approve", '{"by": "\\ud800"}', "by", "character 0 is a lone surrogate or an invalid byte"),
        ("deny", '{"by": "night\\nshift", "reason": "no"}', "by", "must be one printable line: character 5"),
        ("approve", '{"by": "x", "reason": 3}', "reason", "'reason' must be text, got int"),
    ):
        bad = await send("POST", f"{url}/{path}", headers={**AUTH, **JSON}, data=body)
        assert bad.status == 400, (body, bad.status, bad.text)
        assert bad.json()["key"] == field and says in bad.json()["error"]
    listed = await send("GET", f"{base}/approvals", headers=AUTH)
    assert [a["approval_id"] for a in listed.json()["approvals"]] == [req.approval_id]  # still pending
    assert not task.done() and runs.args == []
    denied = await send("POST", f"{url}/deny", headers={**AUTH, **JSON}, data='{"reason": "wrong \\udfff disk"}')
    assert denied.status == 200  # a reason is made valid text, not refused
    result = await task
    assert result.status == "rejected" and "wrong \ufffd disk" in result.message and runs.args == []
