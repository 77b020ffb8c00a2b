"""Overhead of Engine.execute_tool (allowlist, validation, events, metrics) over calling the tool directly.

Both are measured in the same run on the same in-process tool; prints medians, p99s and the difference, in wall
time and in process CPU time (the CPU column moves less when other processes share the machine).
Goal (issue 13): at most 25 µs added at the median with events and metrics on.

Then the cost of tracing (issue 36 item 5), in the same run: a tool call and its turn's ``turn.timings`` (with what
the engine's tasks do after them before the next call) on an engine with tracing off, and on one tracing every call
to a loopback OTLP/HTTP sink (a process of its own). Goal: off adds nothing (no subscription, the SDK not even
imported), on at most 5 % of process CPU. Tracing defers its work (built and sent in batches on a thread), so the
two are timed in interleaved rounds of whole blocks of calls, and an "on" round ends only when its spans have been
built, encoded and posted (``Telemetry.flush``): every µs a span costs is inside the window. The tool here is an
in-process echo (~1 µs): the spans' cost is measured against the engine's path alone.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.app import Engine
from engine.config.models import Settings
from engine.core.stats import percentiles
from engine.events import CallStarted, TurnTimings
from engine.sessions.session import CallSession
from engine.telemetry import Telemetry
from engine.tools.base import (
    FunctionTool,
    ToolDefinition,
    ToolExecutionContext,
    ToolParameter,
    ToolResult,
)

N = int(os.environ.get("BENCH_N", "20000"))
#: Tool calls per round of the tracing table (each way): on, a round ends when its spans are sent. Two spans a call
#: (the tool's and its turn's): a round is one full batch at the default OTEL_BSP_MAX_EXPORT_BATCH_SIZE (4096), so the
#: flush that ends it sends no extra short batch a steady stream would not.
ROUND = int(os.environ.get("BENCH_ROUND", "2048"))
#: Rounds each way (interleaved).
ROUNDS = int(os.environ.get("BENCH_ROUNDS", "16"))


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


class _FullGcTimer:
    """CPU spent in full (oldest-generation) garbage collections: a ``gc.callbacks`` entry."""

    def __init__(self) -> None:
        self.cpu = 0.0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] == 2:
            if phase == "start":
                self._start = time.thread_time()
            else:
                self.cpu += time.thread_time() - self._start


class _Sink(BaseHTTPRequestHandler):
    """An OTLP/HTTP receiver that takes every export and answers 200 (the collector's side is not measured); it keeps
    the connection open between exports, as collectors do (HTTP/1.1)."""

    protocol_version = "HTTP/1.1"

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def sink() -> None:
    """The collector, in a process of its own (``--sink``): its CPU is not the engine's. Prints its port."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    print(server.server_address[1], flush=True)
    server.serve_forever()


async def tracing(tool: FunctionTool, args: dict[str, Any]) -> None:
    for name in [k for k in os.environ if k.startswith("OTEL_")]:
        del os.environ[name]
    proc = await asyncio.create_subprocess_exec(sys.executable, __file__, "--sink", stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    endpoint = f"http://127.0.0.1:{(await proc.stdout.readline()).decode().strip()}"
    off = Engine(Settings(), extra_tools=[tool])
    on = Engine(Settings.model_validate({"engine": {"telemetry": {"endpoint": endpoint}}}), extra_tools=[tool])
    await off.start()
    off_subscribers = off.bus.subscriber_count
    sdk_after_off = "opentelemetry.sdk.trace" in sys.modules
    await on.start()
    telemetry = next(c for c in on.components if isinstance(c, Telemetry))
    session = CallSession(call_id="bench", context="c", provider="p")
    session.shown_tools = frozenset({"echo"})
    for e in (off, on):  # the call the tool calls belong to (its span, when on)
        e.bus.publish(CallStarted(call_id="bench", context="c", provider="p"))

    async def round_(e: Engine, calls: int) -> tuple[float, float]:
        """Wall and process CPU of ``calls`` tool calls, each with its turn's end; on, until their spans are sent."""
        c, t = time.process_time(), time.perf_counter()
        for _ in range(calls):
            await e.execute_tool(session, "echo", args)
            # the turn it was part of ends (when on: a turn span and the tool's span under it)
            e.bus.publish(TurnTimings(call_id="bench", turn=1, tier="standard", budget_ms=1000, latency_ms=1.0))
            for _ in range(3):  # the engine's tasks run before the next call
                await asyncio.sleep(0)
        if e is on:  # the spans' deferred work (building, encoding, the POST) inside the measured window
            assert await telemetry.flush()
        return time.perf_counter() - t, time.process_time() - c

    for _ in range(2):  # warm up both (rounds no larger than the measured ones: OTEL_BSP_MAX_QUEUE_SIZE drops none)
        await round_(off, ROUND)
        await round_(on, ROUND)
    wall: dict[Engine, list[float]] = {off: [], on: []}
    cpu: dict[Engine, list[float]] = {off: [], on: []}
    full_gcs: dict[Engine, int] = {off: 0, on: 0}
    full_gc_cpu: dict[Engine, float] = {off: 0.0, on: 0.0}
    gc_timer = _FullGcTimer()
    gc.callbacks.append(gc_timer)
    rounds = ROUNDS
    for i in range(rounds):
        for e in (off, on) if i % 2 == 0 else (on, off):  # interleaved, each first in turn
            before, spent = gc.get_stats()[2]["collections"], gc_timer.cpu
            w, c = await round_(e, ROUND)
            full_gcs[e] += gc.get_stats()[2]["collections"] - before
            full_gc_cpu[e] += gc_timer.cpu - spent
            wall[e].append(w)
            cpu[e].append(c)
    gc.callbacks.remove(gc_timer)
    await off.stop()
    await on.stop()
    proc.terminate()
    await proc.wait()

    def per_call(v: list[float]) -> float:
        return sum(v) / (len(v) * ROUND) * 1e6

    o, n, oc, nc = per_call(wall[off]), per_call(wall[on]), per_call(cpu[off]), per_call(cpu[on])
    paired = sorted(b / a for a, b in zip(cpu[off], cpu[on], strict=True))
    median = paired[len(paired) // 2]
    print(f"tracing off: SDK imported {sdk_after_off}, bus subscribers {off_subscribers} (none of them telemetry's)")
    print(f"{rounds} rounds of {ROUND} calls each way, interleaved; on, each round ends when its spans are sent")
    print(f"tool call, tracing off   mean {o:8.2f} µs   CPU mean {oc:6.2f} µs   full GCs in its rounds {full_gcs[off]}")
    print(f"tool call, tracing on    mean {n:8.2f} µs   CPU mean {nc:6.2f} µs   full GCs in its rounds {full_gcs[on]}")
    print(
        f"ratio on/off             {n / o:8.3f}   CPU {nc / oc:6.3f}   (CPU median of rounds {median:.3f}; goal ≤ 1.05)"
    )
    # A full collection runs in whichever round crosses the GC's threshold: its cost is every object of the process
    # (both engines), its cause mostly the events the recorders hold. Without them, the difference of the two sides:
    goc, gnc = (full_gc_cpu[e] / (len(cpu[e]) * ROUND) * 1e6 for e in (off, on))
    ratio = (nc - gnc) / (oc - goc)
    print(f"without full GCs         CPU off {oc - goc:6.2f} µs   on {nc - gnc:6.2f} µs   ratio {ratio:6.3f}")
    ok = nc / oc <= 1.05 and not sdk_after_off
    print("RESULT tracing:", "OK" if ok else "OVER GOAL")


if __name__ == "__main__":
    if sys.argv[1:] == ["--sink"]:
        sink()
    else:
        asyncio.run(main())
