"""Overhead of Engine.execute_tool (allowlist, validation, events, metrics) over calling the tool directly.

Both are measured in the same run on the same in-process tool; prints medians, p99s and the difference, in wall
time and in process CPU time (the CPU column moves less when other processes share the machine).
Goal (issue 13): at most 25 µs added at the median with events and metrics on.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.app import Engine
from engine.config.models import Settings
from engine.sessions.session import CallSession
from engine.stats import percentiles
from engine.tools.base import (
    FunctionTool,
    ToolDefinition,
    ToolExecutionContext,
    ToolParameter,
    ToolResult,
)

N = int(__import__("os").environ.get("BENCH_N", "20000"))


async def echo(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
    return ToolResult.success(args["text"])


async def main() -> None:
    tool = FunctionTool(
        ToolDefinition(
            "echo",
            "Echo.",
            parameters=(
                ToolParameter("text", "string", required=True, max_length=100),
                ToolParameter("times", "integer", minimum=1, maximum=3),
            ),
        ),
        echo,
    )
    engine = Engine(Settings(), extra_tools=[tool])
    sub = engine.bus.subscribe(maxsize=1000)  # a live subscriber, as the console would have
    session = CallSession(call_id="bench", context="c", provider="p")
    session.shown_tools = frozenset({"echo"})
    ctx = ToolExecutionContext("bench", session, engine.settings, engine.bus.publish)
    args = {"text": "hello", "times": 2}

    direct: list[float] = []
    path: list[float] = []
    direct_cpu: list[float] = []
    path_cpu: list[float] = []
    cpu = time.process_time
    for _ in range(2000):  # warm up both
        await tool.execute(args, ctx)
        await engine.execute_tool(session, "echo", args)
    for _ in range(N):
        c, t = cpu(), time.perf_counter()
        await tool.execute(args, ctx)
        direct.append(time.perf_counter() - t)
        direct_cpu.append(cpu() - c)
        c, t = cpu(), time.perf_counter()
        await engine.execute_tool(session, "echo", args)
        path.append(time.perf_counter() - t)
        path_cpu.append(cpu() - c)
        sub.drain()
    d50, d99 = (v * 1e6 for v in percentiles(direct, 0.5, 0.99))
    p50, p99 = (v * 1e6 for v in percentiles(path, 0.5, 0.99))
    print(f"calls: {N} each, events and metrics on, one live subscriber")
    print(f"direct tool.execute      p50 {d50:8.2f} µs   p99 {d99:8.2f} µs")
    print(f"Engine.execute_tool      p50 {p50:8.2f} µs   p99 {p99:8.2f} µs")
    print(f"added by the path        p50 {p50 - d50:8.2f} µs   p99 {p99 - d99:8.2f} µs   (goal: p50 ≤ 25 µs)")
    print(f"ratio path/direct p50    {p50 / d50:8.1f}x")
    dc50, pc50 = (percentiles(v, 0.5)[0] * 1e6 for v in (direct_cpu, path_cpu))
    print(f"process CPU p50          direct {dc50:6.2f} µs   path {pc50:6.2f} µs   added {pc50 - dc50:6.2f} µs")
    print("RESULT:", "OK" if p50 - d50 <= 25 else "OVER GOAL")


if __name__ == "__main__":
    asyncio.run(main())
