"""Overhead of Engine.execute_tool (allowlist, validation, events, metrics) over calling the tool directly.

Both are measured in the same run on the same in-process tool; prints medians, p99s and the difference, in wall
time and in process CPU time (the CPU column moves less when other processes share the machine).
Goal (issue 13): at most 25 µs added at the median with events and metrics on.

Then the cost of tracing (issue 36 item 5), in the same run: a tool call and its turn's ``turn.timings`` (with what
the engine's tasks do after them before the next call) on an engine with tracing off, and on one tracing every call
to a loopback OTLP/HTTP sink. Goal: off adds nothing (no subscription, the SDK not even imported), on at most 5 %.
The tool here is an in-process echo (~1 µs): the spans' cost is measured against the engine's path alone.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.app import Engine
from engine.config.models import Settings
from engine.events import CallStarted, TurnTimings
from engine.sessions.session import CallSession
from engine.stats import percentiles
from engine.tools.base import (
    FunctionTool,
    ToolDefinition,
    ToolExecutionContext,
    ToolParameter,
    ToolResult,
)

N = int(os.environ.get("BENCH_N", "20000"))


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
    await engine.stop()
    await tracing(tool, args)


class _Sink(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver that takes every export and answers 200 (the collector's side is not measured)."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


async def tracing(tool: FunctionTool, args: dict[str, Any]) -> None:
    for name in [k for k in os.environ if k.startswith("OTEL_")]:
        del os.environ[name]
    sink = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{sink.server_address[1]}"
    off = Engine(Settings(), extra_tools=[tool])
    on = Engine(Settings.model_validate({"engine": {"telemetry": {"endpoint": endpoint}}}), extra_tools=[tool])
    await off.start()
    off_subscribers = off.bus.subscriber_count
    sdk_after_off = "opentelemetry.sdk.trace" in sys.modules
    await on.start()
    timed: dict[str, list[float]] = {"off": [], "on": []}
    cpu_timed: dict[str, list[float]] = {"off": [], "on": []}
    cpu = time.process_time

    session = CallSession(call_id="bench", context="c", provider="p")
    session.shown_tools = frozenset({"echo"})
    for e in (off, on):  # the call the tool calls belong to (its span, when on)
        e.bus.publish(CallStarted(call_id="bench", context="c", provider="p"))

    async def one(e: Engine, key: str | None) -> None:
        c, t = cpu(), time.perf_counter()
        await e.execute_tool(session, "echo", args)
        # the turn it was part of ends (when on: a turn span and the tool's span under it)
        e.bus.publish(TurnTimings(call_id="bench", turn=1, tier="standard", budget_ms=1000, latency_ms=1.0))
        for _ in range(3):  # the engine's tasks (the span builder) run before the next call
            await asyncio.sleep(0)
        if key is not None:
            timed[key].append(time.perf_counter() - t)
            cpu_timed[key].append(cpu() - c)

    for _ in range(2000):
        await one(off, None)
        await one(on, None)
    for _ in range(N):
        await one(off, "off")
        await one(on, "on")
    await off.stop()
    await on.stop()
    sink.shutdown()
    o50, n50 = (percentiles(timed[k], 0.5)[0] * 1e6 for k in ("off", "on"))
    oc50, nc50 = (percentiles(cpu_timed[k], 0.5)[0] * 1e6 for k in ("off", "on"))
    ratio = n50 / o50
    print(f"tracing off: SDK imported {sdk_after_off}, bus subscribers {off_subscribers} (none of them telemetry's)")
    print(f"tool call, tracing off   p50 {o50:8.2f} µs   CPU p50 {oc50:6.2f} µs")
    print(f"tool call, tracing on    p50 {n50:8.2f} µs   CPU p50 {nc50:6.2f} µs")
    print(f"ratio on/off p50         {ratio:8.3f}   CPU {nc50 / oc50:6.3f}   (goal: ≤ 1.05)")
    print("RESULT tracing:", "OK" if ratio <= 1.05 and not sdk_after_off else "OVER GOAL")


if __name__ == "__main__":
    asyncio.run(main())
