"""What the engine adds to an MCP call: raw SDK ``call_tool`` against ``Engine.execute_tool`` on one stdio server.

Why it exists: every tool call goes through the allowlist, validation, timeout, the supervisor's death race,
result shaping, events and metrics; this measures that cost on the same live connection in one run (goal: at
most 0.3 ms added at p50 and 1 ms at p99). Prints numbers; asserts nothing.

    .venv/bin/python bench/mcp_overhead.py [--calls 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.app import Engine  # noqa: E402
from engine.config.models import Settings  # noqa: E402
from engine.sessions.session import CallSession  # noqa: E402
from engine.stats import percentiles  # noqa: E402

SERVER = str(ROOT / "tests" / "fixtures" / "mcp_servers" / "fixture_server.py")


async def main(calls: int) -> None:
    settings = Settings.model_validate({"mcp": {"servers": {"echo": {"command": [sys.executable, SERVER]}}}})
    async with Engine(settings) as engine:
        conn = engine.mcp.supervisors["echo"].conn
        assert conn is not None and conn.client is not None
        client = conn.client
        session = CallSession(call_id="bench", context="bench", provider="bench")
        session.shown_tools = frozenset({"mcp_echo_echo"})
        args = {"text": "hello"}
        raw: list[float] = []
        full: list[float] = []
        for _ in range(100):  # warm both paths
            await client.call_tool("echo", args)
            await engine.execute_tool(session, "mcp_echo_echo", args)
        for i in range(calls):  # interleaved so drift affects both equally
            t = time.perf_counter()
            await client.call_tool("echo", args)
            raw.append((time.perf_counter() - t) * 1000)
            t = time.perf_counter()
            r = await engine.execute_tool(session, "mcp_echo_echo", args, tool_call_id=str(i))
            full.append((time.perf_counter() - t) * 1000)
            if r.status != "success":
                raise SystemExit(f"call {i} failed: {r.message}")
    for label, q in (("p50", 0.5), ("p99", 0.99)):
        (a,), (b,) = percentiles(raw, q), percentiles(full, q)
        print(f"{label}: raw SDK {a:.3f} ms, Engine.execute_tool {b:.3f} ms, added {b - a:+.3f} ms")
    print(f"goal: added <= 0.300 ms at p50 and <= 1.000 ms at p99 ({calls} calls each)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=2000)
    asyncio.run(main(parser.parse_args().calls))
