"""An attached console answers tool approvals: over HTTP (``/events?approver=NAME``) and over Redis (its approver key),
calls that need approval wait for it and it approves them with the ``approve_tool`` command; when it leaves (after
its grace) nothing waits any more; a client that is no approver never makes a call wait."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from engine.app import Engine
from engine.config.models import Settings
from engine.events import ToolApprovalRequested
from engine.remote.base import RemoteEngines
from engine.remote.http_client import HttpEngines
from engine.remote.redis_client import RedisEngines
from tests.engine.http.helpers import AUTH, TOKEN, http_of, send
from tests.engine.http.test_approvals_http import Runs, call
from tests.engine.store.redis_peer import RedisServer
from tests.waiting import wait_until


def settings(tmp_path: Path, **engine: Any) -> Settings:
    (tmp_path / "s.yaml").write_text("greeting: hi\nfallback: what?\n")
    return Settings.model_validate(
        {
            "engine": {"http": {"port": 0, "auth_token": TOKEN}, "id": "e1", "heartbeat_s": 0.2, **engine},
            "providers": {"s": {"type": "scripted", "script": str(tmp_path / "s.yaml")}},
            "contexts": {"c": {"provider": "s", "tools": ["wipe_disk"], "approve": ["wipe_disk"]}},
        }
    )


async def until(check: Callable[[], bool], what: str, within_s: float = 20.0) -> None:
    await wait_until(check, within=within_s, what=what)


@pytest.fixture
async def engine_box() -> AsyncIterator[list[Engine]]:
    made: list[Engine] = []
    yield made
    for e in made:
        await e.stop()


async def approve_through(engine: Engine, client: RemoteEngines, runs: Runs, name: str) -> None:
    follow = asyncio.create_task(_drain(client))
    try:
        await until(lambda: f"{name}" in " ".join(engine.executor.approvals.approvers), "the console as approver")
        sub = engine.bus.subscribe(maxsize=1000, types={"tool.approval_requested"})
        task = call(engine)
        ev = await asyncio.wait_for(sub.get(), 20)
        assert isinstance(ev, ToolApprovalRequested)
        assert not task.done()  # it waits for the attached console
        answer = await client.send("e1", "approve_tool", {"approval_id": ev.approval_id, "by": name}, timeout_s=10)
        assert answer  # the dispatcher's JSON answer
        result = await asyncio.wait_for(task, 20)
        assert result.status == "success" and runs.args == [{"disk": "sda"}]
    finally:
        await client.close()
        follow.cancel()
    # gone after its grace: nothing waits for it any more
    await until(lambda: not engine.executor.approvals.approvers, "the approver to leave")
    result = await asyncio.wait_for(call(engine), 20)
    assert result.status == "rejected" and "no operator is attached" in result.message


async def _drain(client: RemoteEngines) -> None:
    async for _ in client.follow():
        pass


async def test_a_console_attached_over_http_answers_approvals(tmp_path: Path, engine_box: list[Engine]) -> None:
    runs = Runs()
    engine = Engine(settings(tmp_path), serve_http=True, extra_tools=[runs.tool])
    await engine.start()
    engine_box.append(engine)
    url = http_of(engine).url or ""
    # a follower that is no approver makes nothing wait
    plain = HttpEngines(url, token=TOKEN)
    follow = asyncio.create_task(_drain(plain))
    await until(lambda: bool(engine.components) and plain.streaming, "the plain stream")
    result = await asyncio.wait_for(call(engine), 20)
    assert result.status == "rejected" and "no operator is attached" in result.message
    await plain.close()
    follow.cancel()
    await approve_through(engine, HttpEngines(url, token=TOKEN, approver="op@box"), runs, "op@box")


async def test_a_bad_approver_name_is_refused(tmp_path: Path, engine_box: list[Engine]) -> None:
    runs = Runs()
    engine = Engine(settings(tmp_path), serve_http=True, extra_tools=[runs.tool])
    await engine.start()
    engine_box.append(engine)
    url = http_of(engine).url or ""
    for make in (
        lambda: HttpEngines(url, token=TOKEN, approver="op box/<1>"),
        lambda: RedisEngines("redis://127.0.0.1:1/0", approver=""),
    ):
        with pytest.raises(ValueError, match="approver name"):
            make()
    refused = await send("GET", f"{url}/events?approver=op%20box", headers=AUTH)  # a client that skips the check
    assert refused.status == 400 and "?approver=" in refused.json()["error"]
    assert not engine.executor.approvals.approvers


async def test_a_console_attached_over_redis_answers_approvals(
    tmp_path: Path, engine_box: list[Engine], redis_server: RedisServer
) -> None:
    runs = Runs()
    # a heartbeat that outlives a loaded machine's pauses (at 0.2 s its key lapsed before the send)
    engine = Engine(settings(tmp_path, store=redis_server.url, heartbeat_s=2), extra_tools=[runs.tool])
    await engine.start()
    engine_box.append(engine)
    await approve_through(engine, RedisEngines(redis_server.url, approver="op@box"), runs, "op@box")
