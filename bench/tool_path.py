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

Both sides record their calls (the flight recorder is on by default) into folders of their own that the bench
deletes, never the user's recordings. The recorder writes from a thread of its own, up to 0.2 s behind; each round
ends with ``Recorder.sync`` on both sides, so a round's CPU holds its own recording and no spill from the round
before (without it, two identical engines measured 0.80-1.04 apart). The noise floor is printed first: the same
rounds on two engines that both trace nothing.
"""

from __future__ import annotations

import asyncio
import gc
import os
import sys
import tempfile
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.app import Engine
from engine.config.models import Settings
from engine.core.stats import percentiles
from engine.events import CallStarted, TurnTimings
from engine.recorder.component import Recorder
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
#: The echo tool's arguments in every call of the bench.
ARGS = {"text": "hello", "times": 2}


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
    with tempfile.TemporaryDirectory(prefix="ava-bench-") as folder:
        await path_overhead(tool, folder)
        await tracing(tool, folder)


def settings(folder: str, name: str, telemetry: dict[str, Any] | None = None) -> Settings:
    """An engine's settings for the bench: its recordings in a folder of its own under ``folder``."""
    raw: dict[str, Any] = {"recording": {"dir": str(Path(folder) / name)}}
    if telemetry is not None:
        raw["engine"] = {"telemetry": telemetry}
    return Settings.model_validate(raw)


async def path_overhead(tool: FunctionTool, folder: str) -> None:
    engine = Engine(settings(folder, "path"), extra_tools=[tool])
    sub = engine.bus.subscribe(maxsize=1000)  # a live subscriber, as the console would have
    session = CallSession(call_id="bench", context="c", provider="p")
    session.shown_tools = frozenset({"echo"})
    ctx = ToolExecutionContext("bench", session, engine.settings, engine.bus.publish)

    direct: list[float] = []
    path: list[float] = []
    direct_cpu: list[float] = []
    path_cpu: list[float] = []
    cpu = time.process_time
    for _ in range(2000):  # warm up both
        await tool.execute(ARGS, ctx)
        await engine.execute_tool(session, "echo", ARGS)
    for _ in range(N):
        c, t = cpu(), time.perf_counter()
        await tool.execute(ARGS, ctx)
        direct.append(time.perf_counter() - t)
        direct_cpu.append(cpu() - c)
        c, t = cpu(), time.perf_counter()
        await engine.execute_tool(session, "echo", ARGS)
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


async def tracing(tool: FunctionTool, folder: str) -> None:
    for name in [k for k in os.environ if k.startswith("OTEL_")]:
        del os.environ[name]
    proc = await asyncio.create_subprocess_exec(sys.executable, __file__, "--sink", stdout=asyncio.subprocess.PIPE)
    assert proc.stdout is not None
    endpoint = f"http://127.0.0.1:{(await proc.stdout.readline()).decode().strip()}"
    try:
        floor = await compare(tool, folder, "floor", None)
        sdk_after_off = "opentelemetry.sdk.trace" in sys.modules
        on = await compare(tool, folder, "tracing", {"endpoint": endpoint})
    finally:
        proc.terminate()
        await proc.wait()
    print(f"tracing off: SDK imported {sdk_after_off}, bus subscribers {floor.subscribers} (none of them telemetry's)")
    print(f"{ROUNDS} rounds of {ROUND} calls each way, interleaved; each round ends when its recording is written")
    print("and, tracing, when its spans are sent")
    floor.show("noise floor: both off  ", "off (2nd)")
    on.show("tracing off vs on      ", "on")
    ok = on.median <= 1.05 and not sdk_after_off
    print(
        "RESULT tracing:",
        "OK" if ok else "OVER GOAL",
        f"(CPU median of the paired rounds {on.median:.3f}; goal ≤ 1.05)",
    )


class Comparison:
    """Two engines' interleaved rounds: per-call wall and CPU, paired CPU ratios, full GCs in each side's rounds."""

    def __init__(self, subscribers: int) -> None:
        self.subscribers = subscribers
        self.wall: tuple[list[float], list[float]] = ([], [])
        self.cpu: tuple[list[float], list[float]] = ([], [])
        self.full_gcs = [0, 0]
        self.full_gc_cpu = [0.0, 0.0]

    @property
    def median(self) -> float:
        paired = sorted(b / a for a, b in zip(*self.cpu, strict=True))
        return paired[len(paired) // 2]

    def show(self, title: str, second: str) -> None:
        def per_call(v: list[float]) -> float:
            return sum(v) / (len(v) * ROUND) * 1e6

        (o, n), (oc, nc) = (map(per_call, self.wall)), (map(per_call, self.cpu))
        # A full collection runs in whichever round crosses the GC's threshold: its cost is every object of the
        # process (both engines). Without them, the difference of the two sides:
        goc, gnc = (t / (len(self.cpu[0]) * ROUND) * 1e6 for t in self.full_gc_cpu)
        print(
            f"{title} CPU per call off {oc:6.2f} µs, {second} {nc:6.2f} µs; ratio {nc / oc:6.3f}, "
            f"median of rounds {self.median:6.3f}; wall ratio {n / o:6.3f}; full GCs {self.full_gcs[0]}/"
            f"{self.full_gcs[1]}, ratio without them {(nc - gnc) / (oc - goc):6.3f}"
        )


async def compare(tool: FunctionTool, folder: str, name: str, telemetry: dict[str, Any] | None) -> Comparison:
    """Rounds of tool calls on an engine tracing nothing and on one with ``telemetry`` (None: tracing nothing too)."""
    engines = (
        Engine(settings(folder, f"{name}-off"), extra_tools=[tool]),
        Engine(settings(folder, f"{name}-2nd", telemetry), extra_tools=[tool]),
    )
    for e in engines:
        await e.start()
    result = Comparison(engines[0].bus.subscriber_count)
    tracer = next((c for c in engines[1].components if isinstance(c, Telemetry) and c.active), None)
    recorders = [next(c for c in e.components if isinstance(c, Recorder)) for e in engines]
    session = CallSession(call_id="bench", context="c", provider="p")
    session.shown_tools = frozenset({"echo"})
    for e in engines:  # the call the tool calls belong to (its span, when tracing)
        e.bus.publish(CallStarted(call_id="bench", context="c", provider="p"))

    async def round_(side: int, calls: int) -> tuple[float, float]:
        """Wall and process CPU of ``calls`` tool calls, each with its turn's end, until their recording is written
        and (tracing) their spans are sent."""
        e = engines[side]
        c, t = time.process_time(), time.perf_counter()
        for _ in range(calls):
            await e.execute_tool(session, "echo", ARGS)
            # the turn it was part of ends (tracing: a turn span and the tool's span under it)
            e.bus.publish(TurnTimings(call_id="bench", turn=1, tier="standard", budget_ms=1000, latency_ms=1.0))
            for _ in range(3):  # the engine's tasks run before the next call
                await asyncio.sleep(0)
        assert await recorders[side].sync()  # the recorder's deferred writes inside the measured window
        if side == 1 and tracer is not None:  # so are the spans' (building, encoding, the POST)
            assert await tracer.flush()
        return time.perf_counter() - t, time.process_time() - c

    for _ in range(2):  # warm up both (rounds no larger than the measured ones: OTEL_BSP_MAX_QUEUE_SIZE drops none)
        await round_(0, ROUND)
        await round_(1, ROUND)
    gc_timer = _FullGcTimer()
    gc.callbacks.append(gc_timer)
    for i in range(ROUNDS):
        for side in (0, 1) if i % 2 == 0 else (1, 0):  # interleaved, each first in turn
            before, spent = gc.get_stats()[2]["collections"], gc_timer.cpu
            w, c = await round_(side, ROUND)
            result.full_gcs[side] += gc.get_stats()[2]["collections"] - before
            result.full_gc_cpu[side] += gc_timer.cpu - spent
            result.wall[side].append(w)
            result.cpu[side].append(c)
    gc.callbacks.remove(gc_timer)
    for e in engines:
        await e.stop()
    return result


if __name__ == "__main__":
    if sys.argv[1:] == ["--sink"]:
        sink()
    else:
        asyncio.run(main())
