"""One stdio echo server, six client stacks: what a tool call costs through the engine next to the peers.

Why it exists: users compare the engine with the raw MCP SDK and with the peer frameworks they would otherwise
use (Pipecat's ``MCPClient``, LiveKit Agents' ``MCPServerStdio``), not with the engine's own client. Each stack
gets its own child running the same echo server; calls run interleaved in rounds whose order rotates, so drift and
noise land on every stack alike. For each stack it prints p50/p99 wall time, the client's CPU per call (the
process's CPU time over the call, which is what a busy engine pays) with its difference to the raw ``ClientSession``
(whole runs' medians, and paired within each round), and the ratios against the raw ``ClientSession``, Pipecat and
LiveKit.

Goals (issue 13): the engine at most 1.0x Pipecat and 1.0x LiveKit at p50 and p99, and at most +60 us of client CPU
per call over the raw ``ClientSession``. Prints numbers; asserts nothing.

    make bench                  # sets up .venv-bench with the `bench` extra (pipecat-ai, livekit-agents)
    .venv-bench/bin/python bench/peers.py [--rounds 20] [--per-round 50]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.budget.stats import percentile  # noqa: E402

SERVER = str(ROOT / "tests" / "fixtures" / "mcp_servers" / "fixture_server.py")
ARGS = {"text": "hello"}
EXPECTED = "hello"

CallFn = Callable[[], Awaitable[Any]]


@dataclass
class Stack:
    """One client stack: how to open it, make one echo call, and close it; and what its calls measured."""

    name: str
    opener: Callable[[contextlib.AsyncExitStack], Awaitable[CallFn]]
    call: CallFn | None = None
    wall_ms: list[float] = field(default_factory=list)
    cpu_us: list[float] = field(default_factory=list)


def _params() -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=[SERVER])


async def open_raw_session(stack: contextlib.AsyncExitStack) -> CallFn:
    """The raw SDK: ``stdio_client`` + ``ClientSession`` (the legacy handshake), as the peers use it."""
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    read, write = await stack.enter_async_context(stdio_client(_params()))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()

    async def call() -> Any:
        result = await session.call_tool("echo", ARGS)
        return result.content[0].text  # type: ignore[union-attr]

    return call


async def open_sdk_client(stack: contextlib.AsyncExitStack) -> CallFn:
    """The SDK's high-level ``mcp.Client`` in auto mode (negotiates the 2026 protocol with this server)."""
    from mcp import Client

    client = await stack.enter_async_context(Client(_params(), mode="auto"))

    async def call() -> Any:
        result = await client.call_tool("echo", ARGS)
        return result.content[0].text  # type: ignore[union-attr]

    return call


async def open_pipecat(stack: contextlib.AsyncExitStack) -> CallFn:
    """Pipecat's ``MCPClient``: the handler its LLM services call for a tool, with a result callback."""
    from loguru import logger
    from pipecat.services.mcp_service import MCPClient

    logger.remove()  # Pipecat logs every call at DEBUG by default; a production deployment runs at WARNING
    logger.add(sys.stderr, level="WARNING")
    client = MCPClient(server_params=_params())
    await client.start()
    stack.push_async_callback(client.close)
    await client.tools()
    box: list[Any] = []

    async def result_callback(result: Any, **_: Any) -> None:
        box.append(result)

    async def call() -> Any:
        box.clear()
        params = SimpleNamespace(
            function_name="echo", tool_call_id="t", arguments=ARGS, result_callback=result_callback
        )
        await client._tool_wrapper(params)  # what its registered tool handler runs
        return box[0]

    return call


async def open_livekit(stack: contextlib.AsyncExitStack) -> CallFn:
    """LiveKit Agents' ``MCPServerStdio``: the function tool it hands its agent, called with raw arguments."""
    from livekit.agents.llm.mcp import MCPServerStdio

    server = MCPServerStdio(command=sys.executable, args=[SERVER])
    await server.initialize()
    stack.push_async_callback(server.aclose)
    tools = {t.info.name: t for t in await server.list_tools()}
    echo = tools["echo"]

    async def call() -> Any:
        return await echo(raw_arguments=ARGS)

    return call


def _engine_opener(mode: str) -> Callable[[contextlib.AsyncExitStack], Awaitable[CallFn]]:
    async def open_engine(stack: contextlib.AsyncExitStack) -> CallFn:
        """``Engine.execute_tool`` with the budget layer, events and metrics on, and a subscriber on the bus."""
        from engine.app import Engine
        from engine.config.models import Settings
        from engine.sessions.session import CallSession

        settings = Settings.model_validate(
            {"mcp": {"servers": {"echo": {"command": [sys.executable, SERVER], "mode": mode}}}}
        )
        engine = await stack.enter_async_context(Engine(settings))
        subscription = engine.bus.subscribe()  # a console or CLI listening, as in production
        stack.callback(subscription.close)
        session = CallSession(call_id="bench", context="bench", provider="bench")
        session.shown_tools = frozenset({"mcp_echo_echo"})
        counter = iter(range(10**9))

        async def call() -> Any:
            result = await engine.execute_tool(session, "mcp_echo_echo", ARGS, tool_call_id=str(next(counter)))
            if result.status != "success":
                raise RuntimeError(f"engine call failed: {result.message}")
            subscription.drain()
            return result.message

        return call

    return open_engine


STACKS: list[tuple[str, Callable[[contextlib.AsyncExitStack], Awaitable[CallFn]]]] = [
    ("raw ClientSession (legacy)", open_raw_session),
    ("mcp.Client (auto)", open_sdk_client),
    ("Pipecat MCPClient", open_pipecat),
    ("LiveKit MCPServerStdio", open_livekit),
    ("Engine.execute_tool (auto)", _engine_opener("auto")),
    ("Engine.execute_tool (legacy)", _engine_opener("legacy")),
]


async def measure(stack: Stack, n: int) -> None:
    assert stack.call is not None
    for _ in range(n):
        c0, t0 = time.process_time_ns(), time.perf_counter_ns()
        out = await stack.call()
        t1, c1 = time.perf_counter_ns(), time.process_time_ns()
        if EXPECTED not in str(out):
            raise RuntimeError(f"{stack.name}: unexpected result {out!r}")
        stack.wall_ms.append((t1 - t0) / 1e6)
        stack.cpu_us.append((c1 - c0) / 1e3)


async def run(rounds: int, per_round: int, warmup: int, only: set[str] | None) -> list[Stack]:
    stacks = [Stack(name, opener) for name, opener in STACKS if not only or any(o in name.lower() for o in only)]
    async with contextlib.AsyncExitStack() as exits:
        for s in stacks:
            try:
                s.call = await s.opener(exits)
            except ImportError as e:
                print(f"skipping {s.name}: {e} (install the bench extra: pip install -e '.[bench]')")
        live = [s for s in stacks if s.call is not None]
        for s in live:
            await measure(s, warmup)
            s.wall_ms.clear()
            s.cpu_us.clear()
        for r in range(rounds):
            shift = r % len(live)
            for s in live[shift:] + live[:shift]:  # rotating order
                await measure(s, per_round)
    return [s for s in stacks if s.call is not None]


def paired_extra(s: Stack, raw: Stack, per_round: int) -> float:
    """The median over rounds of (this stack's median CPU in the round − the raw session's in the same round): the
    machine's speed drifts between rounds (this box runs at two speeds minutes apart), and a difference taken within
    each round cancels that drift, where the difference of the whole runs' medians does not."""
    diffs = []
    for r in range(0, min(len(s.cpu_us), len(raw.cpu_us)), per_round):
        mine, base = sorted(s.cpu_us[r : r + per_round]), sorted(raw.cpu_us[r : r + per_round])
        diffs.append(percentile(mine, 0.5) - percentile(base, 0.5))
    return percentile(sorted(diffs), 0.5) if diffs else 0.0


def report(stacks: list[Stack], per_round: int) -> None:
    def row(s: Stack) -> tuple[float, float, float]:
        w = sorted(s.wall_ms)
        c = sorted(s.cpu_us)
        return percentile(w, 0.5), percentile(w, 0.99), percentile(c, 0.5)

    rows = {s.name: row(s) for s in stacks}
    raw = rows.get("raw ClientSession (legacy)")
    raw_stack = next((s for s in stacks if s.name == "raw ClientSession (legacy)"), None)
    paired = {s.name: paired_extra(s, raw_stack, per_round) for s in stacks} if raw_stack else {}
    peers = {k: v for k, v in rows.items() if k.startswith(("Pipecat", "LiveKit"))}
    n = len(stacks[0].wall_ms) if stacks else 0
    print(f"{n} calls per stack, interleaved in rotating rounds; wall p50/p99 in ms, client CPU per call in us (p50)")
    print(f"{'stack':<30} {'p50':>7} {'p99':>7} {'cpu':>7} {'cpu vs raw':>11} {'paired':>9}  ratios p50 / p99")
    for name, (p50, p99, cpu) in rows.items():
        extra = f"{cpu - raw[2]:+9.0f}us" if raw else ""
        pair = f"{paired[name]:+7.0f}us" if name in paired else ""
        ratios = []
        for peer, (pp50, pp99, _) in peers.items():
            if peer != name:
                ratios.append(f"{p50 / pp50:.2f}x/{p99 / pp99:.2f}x {peer.split()[0]}")
        if raw and name != "raw ClientSession (legacy)":
            ratios.insert(0, f"{p50 / raw[0]:.2f}x/{p99 / raw[1]:.2f}x raw")
        print(f"{name:<30} {p50:7.3f} {p99:7.3f} {cpu:7.0f} {extra:>11} {pair:>9}  {'  '.join(ratios)}")
    print(
        "paired: the median over rounds of the CPU difference to raw within each round (cancels drift between rounds)"
    )
    print("goals: Engine <= 1.00x Pipecat and <= 1.00x LiveKit at p50 and p99; client CPU <= +60 us over raw")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--per-round", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--only", action="append", help="run only stacks whose name contains this (repeatable)")
    a = parser.parse_args()
    only = {o.lower() for o in a.only} if a.only else None
    report(asyncio.run(run(a.rounds, a.per_round, a.warmup, only)), a.per_round)


if __name__ == "__main__":
    main()
