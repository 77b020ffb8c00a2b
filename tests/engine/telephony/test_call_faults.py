"""Phone-call faults: the caller hangs up mid-tool, the events socket drops mid-call, wrong ARI credentials."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emulator import AriEmulator

from engine.events import CallEnded
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolResult
from tests.engine.telephony.phone import desk_engine, speech, until_quiet
from tests.waiting import wait_until


async def eventually(condition: Callable[[], bool], within_s: float = 10.0) -> None:
    await wait_until(condition, within=within_s)


def slow_order_tool(started: asyncio.Event, finished: list[str]) -> FunctionTool:
    async def check(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        started.set()
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            finished.append("cancelled")
            raise
        finished.append("completed")
        return ToolResult.success("Your order ships tomorrow.")

    return FunctionTool(ToolDefinition("check_order", "Look up the caller's order."), check)


async def test_caller_hangs_up_mid_tool_releases_everything(tmp_path: Path) -> None:
    say = speech("check my order")
    started, finished = asyncio.Event(), list[str]()
    async with AriEmulator() as emu:
        async with desk_engine(emu, tmp_path, 43000, [slow_order_tool(started, finished)]) as engine:
            sub = engine.bus.subscribe(maxsize=10_000)
            caller = await emu.incoming_call("ava")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            await until_quiet(emu, caller.id)
            phone = emu.media_for(caller.id)
            await phone.speak(say)
            await phone.silence(1.0)
            async with asyncio.timeout(20):
                await started.wait()
            await emu.caller_hangs_up(caller.id)
            async with asyncio.timeout(10):
                async for e in sub:
                    if isinstance(e, CallEnded):
                        assert e.reason == "caller hung up"
                        break
            await wait_until(lambda: engine.live_calls() == [], what="the ended call to leave the live calls")
        assert finished in (["cancelled"], ["completed"])
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []


async def test_events_socket_drops_mid_call(tmp_path: Path) -> None:
    async with AriEmulator() as emu:
        async with desk_engine(emu, tmp_path, 43200) as engine:
            first = await emu.incoming_call("ava", caller_number="1001")
            second = await emu.incoming_call("ava", caller_number="1002")
            for c in (first, second):
                await emu.wait_event("ChannelEnteredBridge", c.id)
            await emu.drop_events()
            # while the engine is deaf, the first caller hangs up: nobody hears its StasisEnd
            await emu.caller_hangs_up(first.id)
            await emu.wait_subscribers()
            await eventually(lambda: len(engine.live_calls()) == 1)  # the reconnect found the first caller gone
            assert [c.caller_number for c in engine.live_calls()] == ["1002"]
            await until_quiet(emu, second.id)  # the second call still talks
            await emu.caller_hangs_up(second.id)
            await eventually(lambda: not engine.live_calls())
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []


async def test_wrong_credentials_keep_the_engine_up_and_say_so(tmp_path: Path) -> None:
    async with AriEmulator() as emu:
        async with desk_engine(emu, tmp_path, 43400, password="wrong") as engine:
            telephony = next(c for c in engine.components if c.name == "telephony")
            await eventually(lambda: telephony.status().get("error") is not None)  # type: ignore[attr-defined]
            status = telephony.status()  # type: ignore[attr-defined]
            assert status["connected"] is False
            assert "wrong ARI username or password" in status["error"]
            assert engine.ready  # telephony retries in the background; everything else works
        assert emu.subscribers == 0
