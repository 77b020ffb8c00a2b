"""What the flight recorder costs: engine CPU with recording on vs off, 50 live calls and 20 tool invocations/s.

Two engines in this process on the same scripted config, one recording (``recording.enabled: true``, into a temp
folder) and one not, each with 50 live calls; each is driven in turn for ``WINDOW_S`` (20 caller turns a second,
each turn one real tool call through the execution path: transcript, tool.requested, tool.completed events) while
the process's CPU time (every thread, the recorder's writer included) is measured. Rounds alternate off/on so
drift in the machine's load hits both. Prints CPU per second for each, the ratio, and the goal: ≤ 2 % more CPU.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import yaml  # noqa: E402

from engine.app import Engine  # noqa: E402
from engine.config.models import Settings  # noqa: E402
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolParameter, ToolResult  # noqa: E402

CALLS = 50
RATE = 20.0
WINDOW_S = 5.0
ROUNDS = 4


def settings(tmp: Path, recording: bool) -> Settings:
    script = tmp / "script.yaml"
    intent = {
        "name": "roll",
        "patterns": [r"roll (?P<n>\d+)"],
        "tools": [{"name": "roll", "args": {"n": "{n}"}}],
        "reply": "You rolled {result}.",
    }
    script.write_text(yaml.safe_dump({"greeting": "Hello.", "intents": [intent], "fallback": "Pardon?"}))
    return Settings.model_validate(
        {
            "engine": {"http": {"enabled": False}},
            "providers": {"s": {"type": "scripted", "script": str(script)}},
            "mcp": {"enabled": False},
            "contexts": {"c": {"provider": "s", "tools": ["roll"]}},
            "recording": {"enabled": recording, "dir": str(tmp / "recordings")},
        }
    )


def roll_tool() -> FunctionTool:
    async def run(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        return ToolResult.success(f"{int(args.get('n', 1)) % 6 + 1}", {"dice": [3]})

    param = ToolParameter("n", "string", "seed", required=True)
    return FunctionTool(ToolDefinition(name="roll", description="Roll a die.", parameters=(param,)), run)


async def console_pump(engine: Engine) -> None:
    """What the console does with the bus at this load (``AvaConsole.pump_events``): every event, in batches. With
    no subscriber at all the engine builds no events (``EventBus.wants``), which is not the situation measured."""
    sub = engine.bus.subscribe(maxsize=50_000)
    while True:
        await sub.get()
        sub.drain()
        await asyncio.sleep(0.05)


async def drive(engine: Engine, calls: list[str], seconds: float) -> tuple[float, int]:
    """``RATE`` caller turns a second (each one tool call) for ``seconds``; returns CPU seconds used and turns."""
    loop = asyncio.get_running_loop()
    turns: set[asyncio.Task[Any]] = set()
    n = 0
    cpu0, t0 = time.process_time(), loop.time()
    while loop.time() - t0 < seconds:
        task = asyncio.create_task(engine.user_said(calls[n % len(calls)], f"roll {n}"))
        turns.add(task)
        task.add_done_callback(turns.discard)
        n += 1
        await asyncio.sleep(max(0.0, t0 + n / RATE - loop.time()))
    await asyncio.gather(*turns)
    await engine.recorder.sync()  # what was recorded in the window is written in the window
    return time.process_time() - cpu0, n


async def main() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="ava-bench-rec-"))
    engines = {
        "off": Engine(settings(tmp, False), extra_tools=[roll_tool()]),
        "on": Engine(settings(tmp, True), extra_tools=[roll_tool()]),
    }
    calls: dict[str, list[str]] = {}
    pumps = []
    for name, engine in engines.items():
        await engine.start()
        pumps.append(asyncio.create_task(console_pump(engine)))
        calls[name] = [(await engine.start_call("c", caller_name=f"bench-{i}")).call_id for i in range(CALLS)]
    for name, engine in engines.items():  # warm-up: caches, first-turn imports
        await drive(engine, calls[name], 1.0)
    per_s: dict[str, list[float]] = {"off": [], "on": []}
    for r in range(ROUNDS):
        for name in ("off", "on") if r % 2 == 0 else ("on", "off"):
            cpu, _ = await drive(engines[name], calls[name], WINDOW_S)
            per_s[name].append(cpu / WINDOW_S)
    writer = engines["on"].recorder.writer
    lines, dropped = (writer.written_lines, writer.dropped) if writer is not None else (0, 0)
    for engine in engines.values():
        await engine.stop()
    for p in pumps:
        p.cancel()
    size = sum(p.stat().st_size for p in (tmp / "recordings").glob("*"))
    off, on = statistics.median(per_s["off"]), statistics.median(per_s["on"])
    print(
        f"flight recorder cost: {CALLS} live calls, {RATE:.0f} tool invocations/s, a console-like subscriber, "
        f"{ROUNDS} rounds of {WINDOW_S:.0f} s"
    )
    for name, value in (("off", off), ("on", on)):
        rounds = ", ".join(f"{v * 100:.2f}" for v in per_s[name])
        print(f"recording {name:<3}  CPU {value * 100:6.2f} % of a core   (rounds: {rounds})")
    print(f"recorded {lines} lines ({size / 1024:.0f} KiB), dropped {dropped}")
    ratio = on / off if off else float("inf")
    added = (on - off) * 100
    print(
        f"ratio on/off: {ratio:.3f}; recording adds {added:+.2f} % of a core   "
        f"goal ≤ +2 % CPU -> {'met' if added <= 2.0 else 'NOT met'}"
    )


if __name__ == "__main__":
    asyncio.run(main())
