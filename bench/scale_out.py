"""Many engines, one console, on Redis: event latency to an attached console and the engine CPU publishing costs.

One run, a real ``redis-server`` on a free loopback port (no persistence), and engine *processes* (this script with
``--engine``), each an ``Engine`` with ``CALLS`` live scripted calls driven at ``RATE`` caller turns a second (each
turn one real tool call through the execution path: transcript, tool and turn events) for ``WINDOW_S``:

* **CPU added by publishing**: every engine runs the same window with ``engine.store: memory`` (nothing published)
  and with ``engine.store: redis://…`` (every event to the per-engine and per-call streams, call hashes, heartbeat),
  rounds alternating memory/redis so drift in the machine's load hits both; each engine reports its process's CPU
  time (all threads) per second. Goal (issue 19): publishing adds ≤ 5 % of a core (printed as percentage points,
  as ``bench/recording.py`` does, and as a ratio to the bare engine, whose scripted turns cost very little).
* **Event latency engine → attached console**: the parent follows every engine through ``open_remote(url)`` (the
  client ``ava-console --attach redis://…`` uses) and takes, for every event received, now − the event's own
  timestamp (same host, same clock). The in-process baseline is what the console gets today: a bus subscriber in
  the engine process, measured the same way there. Goal: ≤ 5 ms p50 on loopback.
* **Growth**: the same with 1 and with 3 engines at once.

Prints one row per engine count and store, and the ratios. Needs ``redis-server`` on PATH (``make setup`` installs
it when run as root).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CALLS = 50
RATE = 20.0
WINDOW_S = 5.0
ROUNDS = 4
ENGINE_COUNTS = (1, 3)


# ------------------------------------------------------------------------------------------------ an engine process


def engine_settings(tmp: Path, engine_id: str, store: str) -> Any:
    import yaml

    from engine.config.models import Settings

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
            "engine": {"http": {"enabled": False}, "store": store, "id": engine_id, "heartbeat_s": 1.0},
            "providers": {"s": {"type": "scripted", "script": str(script)}},
            "mcp": {"enabled": False},
            "contexts": {"c": {"provider": "s", "tools": ["roll"]}},
        }
    )


def roll_tool() -> Any:
    from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolParameter, ToolResult

    async def run(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        return ToolResult.success(f"{int(args.get('n', 1)) % 6 + 1}", {"dice": [3]})

    param = ToolParameter("n", "string", "seed", required=True)
    return FunctionTool(ToolDefinition(name="roll", description="Roll a die.", parameters=(param,)), run)


async def local_console(engine: Any, latencies: list[float]) -> None:
    """The in-process console's view (``AvaConsole``'s event pump): every event, latency from its timestamp."""
    sub = engine.bus.subscribe(maxsize=50_000)
    while True:
        first = await sub.get()
        now = time.time()
        latencies.extend(now - e.ts for e in (first, *sub.drain()))


async def drive(engine: Any, calls: list[str], seconds: float) -> float:
    """``RATE`` caller turns a second for ``seconds``; returns the process CPU seconds used per second."""
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
    return (time.process_time() - cpu0) / (loop.time() - t0)


async def engine_main(engine_id: str, stores: list[str]) -> None:
    """One engine process: per line on stdin ``<store index>`` run a window with that store's engine and print
    ``{"cpu": …, "local_ms": [...]}``; ``quit`` ends."""
    from engine.app import Engine

    tmp = Path(tempfile.mkdtemp(prefix=f"ava-bench-scale-{engine_id}-"))
    engines, calls = [], []
    local: list[list[float]] = []
    consoles = []
    for i, store in enumerate(stores):
        engine = Engine(
            engine_settings(tmp, f"{engine_id}{'-mem' if store == 'memory' else ''}", store), extra_tools=[roll_tool()]
        )
        await engine.start()
        engines.append(engine)
        local.append([])
        consoles.append(asyncio.create_task(local_console(engine, local[i])))
        calls.append([(await engine.start_call("c", caller_name=f"bench-{j}")).call_id for j in range(CALLS)])
        await drive(engine, calls[i], 1.0)  # warm-up: caches, first-turn imports
    loop = asyncio.get_running_loop()
    print(json.dumps({"ready": engine_id}), flush=True)
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if not line or line == "quit":
            break
        i = int(line)
        local[i].clear()
        cpu = await drive(engines[i], calls[i], WINDOW_S)
        await asyncio.sleep(0.3)  # what is still in the store's batch goes out before the window is over
        print(json.dumps({"cpu": cpu, "local_ms": [x * 1000 for x in local[i]]}), flush=True)
    for c in consoles:
        c.cancel()
    for engine in engines:
        await engine.stop()
    shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------------------------------------ the parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_redis(tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    exe = shutil.which("redis-server")
    if exe is None:
        sys.exit("redis-server is not installed (make setup installs it when run as root)")
    port = free_port()
    proc = subprocess.Popen(
        [
            exe,
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            str(tmp),
            "--loglevel",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 10
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5) as s:
                s.sendall(b"PING\r\n")
                if s.recv(16).startswith(b"+PONG"):
                    break
        except OSError:
            pass
        if time.monotonic() > deadline:
            sys.exit("redis-server did not start")
        time.sleep(0.05)
    return proc, f"redis://127.0.0.1:{port}/0"


class EngineProc:
    def __init__(self, engine_id: str, stores: list[str]) -> None:
        self.id = engine_id
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--engine", engine_id, "--stores", json.dumps(stores)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=ROOT,
        )

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError(f"engine {self.id} ended (exit {self.proc.wait()})")
            if line.startswith("{"):
                return dict(json.loads(line))

    def send(self, text: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(text + "\n")
        self.proc.stdin.flush()


async def follow(url: str, latencies: list[float], recording: asyncio.Event) -> None:
    """The attached console: every event of every engine, latency from the event's own timestamp."""
    from engine import open_remote
    from engine.remote.base import RemoteEvent

    remote = open_remote(url)
    await remote.connect()
    try:
        async for item in remote.follow():
            if isinstance(item, RemoteEvent) and recording.is_set():
                latencies.append((time.time() - item.event.ts) * 1000)
    finally:
        await remote.close()


def pct(values: list[float], q: float) -> float:
    from engine import percentile

    return percentile(sorted(values), q / 100) if values else float("nan")


async def run_count(url: str, count: int) -> dict[str, Any]:
    stores = ["memory", url]
    procs = [EngineProc(f"bench-{count}-{k}", stores) for k in range(count)]
    for p in procs:
        p.read()  # ready
    remote_ms: list[float] = []
    recording = asyncio.Event()
    follower = asyncio.create_task(follow(url, remote_ms, recording))
    await asyncio.sleep(1.0)  # the follower caught up with the warm-up
    cpu: dict[str, list[float]] = {"memory": [], "redis": []}
    local_ms: list[float] = []
    for r in range(ROUNDS):
        for i in (0, 1) if r % 2 == 0 else (1, 0):
            name = "memory" if i == 0 else "redis"
            if name == "redis":
                recording.set()
            for p in procs:
                p.send(str(i))
            results = [await asyncio.to_thread(p.read) for p in procs]
            await asyncio.sleep(0.3)
            recording.clear()
            cpu[name].extend(res["cpu"] for res in results)
            if name == "memory":
                for res in results:
                    local_ms.extend(res["local_ms"])
    for p in procs:
        p.send("quit")
    for p in procs:
        await asyncio.to_thread(p.proc.wait, 30)
    follower.cancel()
    return {"cpu": cpu, "local_ms": local_ms, "remote_ms": remote_ms}


async def parent() -> None:
    tmp = Path(tempfile.mkdtemp(prefix="ava-bench-scale-"))
    redis, url = start_redis(tmp)
    try:
        rows = {count: await run_count(url, count) for count in ENGINE_COUNTS}
    finally:
        redis.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    print(
        f"scale-out on Redis: {CALLS} live calls per engine, {RATE:.0f} tool turns/s per engine, {ROUNDS} rounds "
        f"of {WINDOW_S:.0f} s alternating memory/redis; latency = console receipt − event timestamp"
    )
    print(f"{'engines':>7} {'store':<7} {'CPU %/engine':>13} {'latency p50 ms':>15} {'p99 ms':>8} {'events':>8}")
    for count, row in rows.items():
        mem, red = statistics.median(row["cpu"]["memory"]), statistics.median(row["cpu"]["redis"])
        for name, value, lat in (("memory", mem, row["local_ms"]), ("redis", red, row["remote_ms"])):
            print(f"{count:>7} {name:<7} {value * 100:>13.2f} {pct(lat, 50):>15.2f} {pct(lat, 99):>8.2f} {len(lat):>8}")
        points = (red - mem) * 100
        ratio = red / mem if mem else float("inf")
        p50 = pct(row["remote_ms"], 50)
        print(
            f"{count:>7} engine(s): publishing adds {points:+.2f} % of a core per engine (goal ≤ 5 % -> "
            f"{'met' if points <= 5 else 'NOT met'} as percentage points; {ratio:.2f}× the bare engine's CPU); "
            f"attached p50 {p50:.2f} ms vs in-process {pct(row['local_ms'], 50):.2f} ms (goal ≤ 5 ms -> "
            f"{'met' if p50 <= 5 else 'NOT met'})"
        )
    if len(rows) > 1:
        first, last = rows[ENGINE_COUNTS[0]], rows[ENGINE_COUNTS[-1]]
        grow = pct(last["remote_ms"], 50) / pct(first["remote_ms"], 50)
        print(
            f"from {ENGINE_COUNTS[0]} to {ENGINE_COUNTS[-1]} engines: attached p50 × {grow:.2f}, p99 × "
            f"{pct(last['remote_ms'], 99) / pct(first['remote_ms'], 99):.2f}"
        )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--engine", help=argparse.SUPPRESS)
    p.add_argument("--stores", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.engine:
        asyncio.run(engine_main(args.engine, json.loads(args.stores)))
    else:
        asyncio.run(parent())


if __name__ == "__main__":
    main()
