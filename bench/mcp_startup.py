"""Concurrent MCP start-up: ten stdio servers started together against one alone (goal: ratio <= 1.5).

Why it exists: eager servers start concurrently at engine start, so ten servers should cost little more than one.
Measures ``Engine.start`` until every server is up, in one run, for three kinds of server:

- light stdio (the goal line): bench/fixtures/light_server.py, standard library only, waits ``--delay`` seconds
  without using the CPU before serving, like a server connecting to a database. Its ratio is the host's own
  concurrency.
- SDK stdio: tests/fixtures/mcp_servers/fixture_server.py, which spends ~0.5 s or more of CPU importing the mcp SDK.
  Ten of them need ten times that CPU, so with few cores their ratio has a floor no host can beat; the bench
  measures the CPU (the children's from /proc at the moment all are up, else ``getrusage(RUSAGE_CHILDREN)`` over
  their whole life; the engine's own from ``getrusage(RUSAGE_SELF)``) and prints that floor next to the ratio.
- in-process: SDK server objects in the engine's own event loop (one thread, so its floor is the engine's CPU).

Prints numbers; asserts nothing.

    .venv/bin/python bench/mcp_startup.py [--servers 10] [--rounds 3] [--delay 1.0]
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import resource
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from engine.app import Engine  # noqa: E402
from engine.config.models import Settings  # noqa: E402
from engine.core.stats import percentiles  # noqa: E402
from engine.mcp import transports  # noqa: E402

LIGHT = str(ROOT / "bench" / "fixtures" / "light_server.py")
SDK_SERVER = str(ROOT / "tests" / "fixtures" / "mcp_servers" / "fixture_server.py")
INPROC = {"transport": "inprocess", "target": "tests.fixtures.mcp_servers.inproc:make"}
#: Ten SDK servers on two busy cores can take several seconds; the bench measures, it does not time out.
CONNECT_TIMEOUT_MS = 120_000


@dataclass(slots=True)
class Run:
    """One ``Engine.start`` with ``n`` servers: wall time, CPU spent, and how spread out spawns and ups were."""

    elapsed_s: float
    engine_cpu_s: float
    children_cpu_s: float
    #: Whether ``children_cpu_s`` is the children's whole life (start, serve, exit) rather than up to "all up".
    children_whole_life: bool
    spawn_spread_s: float | None
    up_spread_s: float


def server_config(kind: str, delay: float) -> dict[str, Any]:
    if kind == "light":  # -I -S: the bare interpreter (no site-packages to scan), as light as a Python peer gets
        command = [sys.executable, "-I", "-S", LIGHT, "--delay", str(delay)]
        return {"command": command, "connect_timeout_ms": CONNECT_TIMEOUT_MS}
    if kind == "sdk":
        return {"command": [sys.executable, SDK_SERVER], "connect_timeout_ms": CONNECT_TIMEOUT_MS}
    return dict(INPROC)


def cpu(who: int) -> float:
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def proc_cpu(pids: list[int]) -> float | None:
    """CPU seconds the live processes ``pids`` have used so far (Linux /proc), or None when it cannot be read."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            return None
        fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) ": state is field 3, utime 14, stime 15
        total += int(fields[11]) + int(fields[12])
    return total / ticks


async def start_once(n: int, kind: str, delay: float) -> Run:
    servers = {f"s{i}": server_config(kind, delay) for i in range(n)}
    engine = Engine(Settings.model_validate({"mcp": {"servers": servers}}))
    spawned: list[float] = []
    pids: list[int] = []

    def on_spawn(pid: int) -> None:
        spawned.append(time.monotonic())
        pids.append(pid)

    transports.spawn_listeners.append(on_spawn)
    self0, children0 = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
    try:
        t = time.perf_counter()
        await engine.start()
        elapsed = time.perf_counter() - t
        engine_cpu = cpu(resource.RUSAGE_SELF) - self0
        children_at_up = proc_cpu(pids)
        ups = [s.up_since for s in engine.mcp.supervisors.values() if s.up_since is not None]
        states = {s["state"] for s in engine.server_status()["servers"]}
    finally:
        await engine.stop()  # the children exit and are reaped here, so their CPU shows in RUSAGE_CHILDREN
        transports.spawn_listeners.remove(on_spawn)
    children_life = cpu(resource.RUSAGE_CHILDREN) - children0
    if states != {"up"} or len(ups) != n:
        raise SystemExit(f"{kind}: not every server came up: {states}")
    return Run(
        elapsed_s=elapsed,
        engine_cpu_s=engine_cpu,
        children_cpu_s=children_at_up if children_at_up is not None else children_life,
        children_whole_life=children_at_up is None,
        spawn_spread_s=max(spawned) - min(spawned) if spawned else None,
        up_spread_s=max(ups) - min(ups),
    )


def median_run(runs: list[Run]) -> Run:
    """Field by field medians (the runs are noisy; one slow round should not decide)."""
    spreads = [r.spawn_spread_s for r in runs if r.spawn_spread_s is not None]

    def median(values: Iterable[float]) -> float:
        return percentiles(values, 0.5)[0]

    return Run(
        elapsed_s=median(r.elapsed_s for r in runs),
        engine_cpu_s=median(r.engine_cpu_s for r in runs),
        children_cpu_s=median(r.children_cpu_s for r in runs),
        children_whole_life=any(r.children_whole_life for r in runs),
        spawn_spread_s=median(spreads) if spreads else None,
        up_spread_s=median(r.up_spread_s for r in runs),
    )


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


TITLES = {
    "light": "light stdio (goal line): bench/fixtures/light_server.py, stdlib only, waits {delay:g} s (I/O) first",
    "sdk": "SDK stdio (CPU-bound, not the goal line): fixture_server.py, each spends its start importing the mcp SDK",
    "inprocess": "in-process: SDK server objects in the engine's own event loop",
}


async def main(n: int, rounds: int, delay: float) -> None:
    # The in-process fixture's MCPServer installs a console log handler; rendering the engine's per-server INFO
    # lines would add terminal work to the measured start-up that has nothing to do with the host.
    logging.getLogger("engine").setLevel(logging.WARNING)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"{n} servers together against one alone; median of {rounds} rounds; {cores} usable cores; load {load}")
    await start_once(1, "light", 0.0)  # warm the imports and code paths the first timed run would pay for
    await start_once(1, "inprocess", delay)
    for kind in ("light", "sdk", "inprocess"):
        ones, manys = [], []
        for _ in range(rounds):
            ones.append(await start_once(1, kind, delay))
            manys.append(await start_once(n, kind, delay))
        one, many = median_run(ones), median_run(manys)
        ratio = many.elapsed_s / one.elapsed_s
        goal = " (goal <= 1.5)" if kind == "light" else ""
        print(TITLES[kind].format(delay=delay))
        print(f"  one server {ms(one.elapsed_s)}; {n} together {ms(many.elapsed_s)}; ratio {ratio:.2f}{goal}")
        spawn = f"spawned within {ms(many.spawn_spread_s)}, " if many.spawn_spread_s is not None else ""
        print(
            f"  {n} together: {spawn}up within {ms(many.up_spread_s)} of each other; engine CPU "
            f"{ms(many.engine_cpu_s)} ({ms(many.engine_cpu_s / n)} a server), children CPU "
            f"{ms(many.children_cpu_s)} ({ms(many.children_cpu_s / n)} a server"
            f"{', whole life' if many.children_whole_life else ' until all up'})"
        )
        # n servers take at least as long as one; the CPU both sides must spend cannot finish faster than all cores
        # allow; and the engine's share runs on its one event-loop thread. Whatever the host does, no less.
        total_cpu = many.engine_cpu_s + many.children_cpu_s
        floor = max(one.elapsed_s, many.engine_cpu_s, total_cpu / cores)
        print(
            f"  floor for {n} together: max(one server {ms(one.elapsed_s)}, engine CPU {ms(many.engine_cpu_s)} on "
            f"one thread, engine + children CPU {ms(total_cpu)} / {cores} cores) = {ms(floor)}; "
            f"ratio floor {floor / one.elapsed_s:.2f}"
        )
    print(
        "note: the engine starts every server at once (spawned within a few ms of each other) and spends a few ms "
        f"of its own CPU a server; what {n} cost beyond one is the CPU the servers themselves need at start, shared "
        f"by {cores} cores (the SDK servers' imports, the light servers' interpreter start-up) and, in-process, the "
        "servers' work on the engine's one thread."
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--servers", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--delay", type=float, default=1.0, help="the light server's wait before serving (seconds)")
    args = parser.parse_args()
    asyncio.run(main(args.servers, args.rounds, args.delay))
