"""A call racing its server's death (``Connection._race``): who wins, and that the task's cancel count survives.

The request runs in the caller's own task and the server's death cancels that task, so these tests pin the
orderings: death alone → ``ServerGone``; an outer cancellation or timeout at the same moment stays a cancellation
or timeout; a death noticed only after the answer changes nothing; and afterwards ``asyncio.timeout`` still works
in the same task (the cancel count is back where it was). A request's way out (the SDK's courtesy cancel) is cut
short after a grace when it blocks, except after the SDK's own read timeout, which it settles itself.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError
from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

from engine.config.models import McpServerConfig
from engine.mcp.connection import Connection, ServerGone
from tests.engine.mcp.helpers import settings, stdio, wait_for
from tests.waiting import forever, pending_callbacks_ran


def connection() -> Connection:
    cfg = McpServerConfig.model_validate({"command": ["unused"]})
    return Connection("fx", cfg, base_dir=Path("."), stderr=None, on_list_changed=lambda: None)


def cancelling() -> int:
    task = asyncio.current_task()
    assert task is not None
    return task.cancelling()


async def timeout_still_works() -> None:
    """An ``asyncio.timeout`` in this task still ends in TimeoutError (a leaked cancel would make it CancelledError)."""
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await forever()


# ----------------------------------------------------------------------------------------- scripted requests


async def test_death_mid_request_ends_it_with_server_gone() -> None:
    conn = connection()
    ended = asyncio.Event()

    async def request() -> str:
        try:
            await forever()
        finally:
            ended.set()
        return "never"

    asyncio.get_running_loop().call_later(0.01, conn.mark_dead, "server fx stopped (process exited with code 5)")
    with pytest.raises(ServerGone, match=r"server fx stopped \(process exited with code 5\)"):
        await conn._race(request())
    assert ended.is_set()  # the request itself was cancelled, not left running
    assert cancelling() == 0
    await timeout_still_works()


async def test_already_dead_never_starts_the_request() -> None:
    conn = connection()
    conn.mark_dead("server fx stopped")
    started = False

    async def request() -> None:
        nonlocal started
        started = True

    with pytest.raises(ServerGone, match="server fx stopped"):
        await conn._race(request())
    assert not started


async def test_outer_timeout_with_a_live_server_is_a_timeout() -> None:
    conn = connection()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await conn._race(forever())
    assert cancelling() == 0 and not conn.dead.done()


@pytest.mark.parametrize("death_first", [True, False])
async def test_outer_timeout_and_death_together_stay_a_timeout(death_first: bool) -> None:
    conn = connection()
    loop = asyncio.get_running_loop()

    async def request(cm: asyncio.Timeout) -> None:
        # Both land before the request resumes: the death callback and the expired timeout, in either order.
        if death_first:
            conn.mark_dead("server fx stopped")
            cm.reschedule(loop.time())
        else:
            cm.reschedule(loop.time())
            await asyncio.sleep(0)  # let the timeout fire first (its handle is due now)
            loop.call_soon(conn.mark_dead, "server fx stopped")
        await forever()

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(None) as cm:
            await conn._race(request(cm))
    assert cancelling() == 0
    await timeout_still_works()


async def test_outer_cancellation_and_death_together_stay_a_cancellation() -> None:
    conn = connection()
    inner: asyncio.Task[None] | None = None

    async def request() -> None:
        assert inner is not None
        conn.mark_dead("server fx stopped")  # the death callback is now scheduled …
        inner.cancel()  # … and a barge-in cancels the turn in the same moment
        await forever()

    async def turn() -> None:
        await conn._race(request())

    inner = asyncio.get_running_loop().create_task(turn())
    with pytest.raises(asyncio.CancelledError):
        await inner
    assert inner.cancelled()


async def test_death_noticed_after_the_answer_changes_nothing() -> None:
    conn = connection()

    async def request() -> str:
        conn.mark_dead("server fx stopped")  # its callback runs only after the answer is back
        return "answer"

    assert await conn._race(request()) == "answer"
    await (
        pending_callbacks_ran()
    )  # the stale callback was scheduled before, so it has run: it must not have cancelled us
    assert cancelling() == 0
    await timeout_still_works()


async def test_connection_closed_becomes_server_gone_and_the_late_callback_is_harmless() -> None:
    conn = connection()

    async def request() -> None:
        raise MCPError(code=CONNECTION_CLOSED, message="Connection closed")

    with pytest.raises(ServerGone, match=r"server fx stopped \(connection closed\)"):
        await conn._race(request())
    await pending_callbacks_ran()
    assert cancelling() == 0
    await timeout_still_works()


async def test_other_protocol_errors_pass_through() -> None:
    conn = connection()

    async def request() -> None:
        raise MCPError(code=REQUEST_TIMEOUT, message="Request 'tools/call' timed out")

    with pytest.raises(MCPError) as info:
        await conn._race(request())
    assert info.value.code == REQUEST_TIMEOUT and not conn.dead.done()


async def test_a_request_that_swallows_the_cancellation_keeps_its_answer() -> None:
    conn = connection()

    async def request() -> str:
        try:
            await forever()
        except asyncio.CancelledError:
            return "late answer"
        return "never"

    asyncio.get_running_loop().call_later(0.01, conn.mark_dead, "server fx stopped")
    assert await conn._race(request()) == "late answer"
    assert cancelling() == 0
    await timeout_still_works()


async def test_a_request_that_turns_the_cancellation_into_an_error_is_server_gone() -> None:
    conn = connection()

    async def request() -> None:
        try:
            await forever()
        except asyncio.CancelledError:
            raise RuntimeError("transport torn down") from None

    asyncio.get_running_loop().call_later(0.01, conn.mark_dead, "server fx stopped")
    with pytest.raises(ServerGone, match="server fx stopped"):
        await conn._race(request())
    assert cancelling() == 0
    await timeout_still_works()


async def blocked_cleanup(cleanup_ended: asyncio.Event) -> None:
    """A request whose way out blocks, as the SDK's shielded courtesy cancel does on a full stdin pipe."""
    try:
        await forever()
    except asyncio.CancelledError:
        try:
            with anyio.move_on_after(30, shield=True):
                await forever()
        finally:
            cleanup_ended.set()
        raise


async def test_outer_timeout_cuts_a_blocked_cleanup_short() -> None:
    conn = connection()
    cleanup_ended = asyncio.Event()
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await conn._race(blocked_cleanup(cleanup_ended))
    assert cleanup_ended.is_set()
    assert cancelling() == 0
    await timeout_still_works()


async def test_death_cuts_a_blocked_cleanup_short() -> None:
    conn = connection()
    cleanup_ended = asyncio.Event()
    asyncio.get_running_loop().call_later(0.01, conn.mark_dead, "server fx stopped")
    with pytest.raises(ServerGone, match="server fx stopped"):
        await conn._race(blocked_cleanup(cleanup_ended))
    assert cleanup_ended.is_set()
    assert cancelling() == 0
    await timeout_still_works()


async def test_a_request_that_keeps_swallowing_is_cut_short_again_and_again() -> None:
    conn = connection()
    swallowed = 0

    async def request() -> None:
        nonlocal swallowed
        while swallowed < 3:
            try:
                await forever()
            except asyncio.CancelledError:
                swallowed += 1
        await forever()

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await conn._race(request())
    assert swallowed == 3 and cancelling() == 0


async def test_the_sdks_own_read_timeout_is_not_cut_short() -> None:
    """Its deadline cancels inside its own scope and is taken back; the slow courtesy cancel after it is left alone."""
    conn = connection()
    courtesy_sent = False

    async def request() -> None:
        nonlocal courtesy_sent
        with anyio.move_on_after(0.01):
            await forever()
        await asyncio.sleep(0.3)  # the unshielded courtesy cancel, slower than the grace
        courtesy_sent = True
        raise MCPError(code=REQUEST_TIMEOUT, message="Request 'tools/call' timed out")

    with pytest.raises(MCPError) as info:
        await conn._race(request())
    assert info.value.code == REQUEST_TIMEOUT and courtesy_sent
    assert cancelling() == 0


# ------------------------------------------------------------------------------------------- a real server


async def test_real_server_killed_mid_call(make_engine: Any) -> None:
    engine = await make_engine(settings({"fx": stdio()}, tool_timeout_ms=30_000))
    conn = engine.mcp.supervisors["fx"].conn
    assert conn is not None and conn.pid is not None
    asyncio.get_running_loop().call_later(0.1, os.kill, conn.pid, signal.SIGKILL)
    async with asyncio.timeout(10):  # liveness only: the call ends when the process does, not after 5 s
        with pytest.raises(ServerGone, match="server fx stopped"):
            await conn.call("slow", {"seconds": 5}, 30, None)
    assert cancelling() == 0
    await timeout_still_works()


async def test_real_server_outer_timeout_then_the_connection_still_works(make_engine: Any) -> None:
    engine = await make_engine(settings({"fx": stdio()}, tool_timeout_ms=30_000))
    sup = engine.mcp.supervisors["fx"]
    conn = sup.conn
    assert conn is not None
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.2):
            await conn.call("slow", {"seconds": 5}, 30, None)
    assert cancelling() == 0
    await wait_for(lambda: any("CANCELLED slow" in line for line in sup.stderr.lines))  # courtesy cancel sent
    result = await conn.call("echo", {"text": "still here"}, 5, None)
    assert not result.is_error and sup.state == "up"


async def test_real_server_sdk_read_timeout_stays_a_protocol_timeout(make_engine: Any) -> None:
    engine = await make_engine(settings({"fx": stdio()}, tool_timeout_ms=30_000))
    conn = engine.mcp.supervisors["fx"].conn
    assert conn is not None
    with pytest.raises(MCPError) as info:
        await conn.call("slow", {"seconds": 5}, 0.2, None)
    assert info.value.code == REQUEST_TIMEOUT and not conn.dead.done()
    assert cancelling() == 0
    await timeout_still_works()


async def test_real_server_that_stopped_reading_still_times_out_on_time(make_engine: Any) -> None:
    """SIGSTOP: the server reads nothing, the stdin pipe fills, the courtesy cancel cannot be written."""
    own = {"AVA_OWN_PROCESS": "1"}  # the process the engine spawned must be the server itself (see _prewarm.py)
    engine = await make_engine(settings({"fx": stdio(env=own)}, tool_timeout_ms=30_000))
    conn = engine.mcp.supervisors["fx"].conn
    assert conn is not None and conn.pid is not None
    os.kill(conn.pid, signal.SIGSTOP)
    try:
        for _ in range(2):
            # Liveness: the SDK gives a blocked courtesy cancel 5 s; the call must not wait for that.
            async with asyncio.timeout(4):
                with pytest.raises(TimeoutError):
                    async with asyncio.timeout(0.2):
                        await conn.call("echo", {"text": "x" * 300_000}, 30, None)
            assert cancelling() == 0
    finally:
        os.kill(conn.pid, signal.SIGCONT)


async def test_real_server_outer_timeout_and_kill_together(make_engine: Any) -> None:
    engine = await make_engine(settings({"fx": stdio()}, tool_timeout_ms=30_000))
    conn = engine.mcp.supervisors["fx"].conn
    assert conn is not None and conn.pid is not None
    loop = asyncio.get_running_loop()

    def both(cm: asyncio.Timeout) -> None:
        assert conn.pid is not None
        os.kill(conn.pid, signal.SIGKILL)
        conn.mark_dead("server fx stopped")  # as the pidfd watch would, in the same moment as the timeout
        cm.reschedule(loop.time())

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(None) as cm:
            loop.call_later(0.1, both, cm)
            await conn.call("slow", {"seconds": 5}, 30, None)
    assert cancelling() == 0
