"""Where an event's time goes between an engine and an attached console: per-hop latency over Redis.

``bench/scale_out.py`` gives one number (console receipt − event timestamp); this splits it. The same engine
processes (``CALLS`` scripted calls at ``RATE`` turns a second, ``engine.store: redis://…`` only) and the same
follower (``open_remote``), with timestamps taken at each hop by wrapping the store's own functions:

* **created → taken**: the event's ``ts`` to the pump stamping it (``EventFeed.add``);
* **taken → sent**: to its batch going out (``RedisStore.send_events``), and **sent → answered** (the batch's
  answer back in the engine; the console does not wait for it);
* **answered → read**: to the follower's ``XREAD`` returning it (negative when the console had it first);
* **read → decoded** (``RedisEngines._events``) and **total** (received − ``ts``);
* how many events a batch carried and how often the follower's read was issued only after the batch was answered
  (the follower was busy, not waiting).

Usage: ``python bench/scale_hops.py [ENGINES]`` (default 3); run it under ``chrt -f 10`` on a busy host, or the
numbers are mostly the host's scheduler.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import scale_out as so

ROUNDS = 2


def instrument_engine(rec: dict[str, list[float]]) -> None:
    """Per entry id: [created, taken, sent, answered, batch size]."""
    from engine.store import feed as feed_mod
    from engine.store import redis_store

    add = feed_mod.EventFeed.add

    def timed_add(self: Any, events: Any) -> int:
        events = list(events)
        dropped = add(self, events)
        now = time.time()
        for ev, stored in zip(events, list(self.pending)[-len(events) :] if events else [], strict=False):
            rec[stored.id] = [ev.ts, now]
        return dropped

    send = redis_store.RedisStore.send_events

    async def timed_send(self: Any, engine_id: str, events: Any, maxlen: int) -> Any:
        sent = time.time()
        answer = await send(self, engine_id, events, maxlen)

        def answered(_f: Any) -> None:
            for ev in events:
                if len(rec.get(ev.id, ())) == 2:
                    rec[ev.id] += [sent, time.time(), len(events)]

        answer.add_done_callback(answered)
        return answer

    feed_mod.EventFeed.add = timed_add  # type: ignore[method-assign]
    redis_store.RedisStore.send_events = timed_send  # type: ignore[method-assign]


async def engine_main(engine_id: str, url: str) -> None:
    """One engine process: per line on stdin a window, then ``{"rec": {entry id: hops}}``; ``quit`` ends."""
    rec: dict[str, list[float]] = {}
    instrument_engine(rec)
    from engine.app import Engine

    tmp = Path(tempfile.mkdtemp(prefix=f"ava-bench-hops-{engine_id}-"))
    engine = Engine(so.engine_settings(tmp, engine_id, url), extra_tools=[so.roll_tool()])
    await engine.start()
    calls = [(await engine.start_call("c", caller_name=f"bench-{j}")).call_id for j in range(so.CALLS)]
    await so.drive(engine, calls, 1.0)
    loop = asyncio.get_running_loop()
    print(json.dumps({"ready": engine_id}), flush=True)
    while (await loop.run_in_executor(None, sys.stdin.readline)).strip() not in ("", "quit"):
        rec.clear()
        await so.drive(engine, calls, so.WINDOW_S)
        await asyncio.sleep(0.3)
        print(json.dumps({"rec": rec}), flush=True)
    await engine.stop()
    shutil.rmtree(tmp, ignore_errors=True)


class HopsEngine(so.EngineProc):
    def __init__(self, engine_id: str, url: str) -> None:
        self.id = engine_id
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--engine", engine_id, url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            cwd=so.ROOT,
        )


def instrument_client(reads: dict[tuple[str, str], list[float]]) -> None:
    """Per (engine, entry id): [read issued, read returned, decoded]."""
    from engine.remote import redis_client
    from engine.store import redis_store

    read_many = redis_store.RedisStore.read_many

    async def timed_read(self: Any, after: Any, block_ms: int, count: int = 1000) -> Any:
        issued = time.time()
        out = await read_many(self, after, block_ms, count)
        back = time.time()
        for stream, entries in out:
            for entry_id, _ in entries:
                reads[(stream.rsplit(":", 1)[-1], entry_id)] = [issued, back]
        return out

    events = redis_client.RedisEngines._events

    def timed_events(self: Any, engine_id: str, entries: Any, stopped: Any) -> Any:
        out = events(self, engine_id, entries, stopped)
        now = time.time()
        for item in out:
            reads.get((engine_id, item.entry_id), []).append(now)
        return out

    redis_store.RedisStore.read_many = timed_read  # type: ignore[method-assign]
    redis_client.RedisEngines._events = timed_events  # type: ignore[method-assign]


async def parent(count: int) -> None:
    reads: dict[tuple[str, str], list[float]] = {}
    instrument_client(reads)
    from engine import open_remote
    from engine.remote.base import RemoteEvent

    tmp = Path(tempfile.mkdtemp(prefix="ava-bench-hops-"))
    redis, url = so.start_redis(tmp)
    received: dict[tuple[str, str], float] = {}
    recording = asyncio.Event()

    async def follow() -> None:
        remote = open_remote(url)
        await remote.connect()
        try:
            async for item in remote.follow():
                if isinstance(item, RemoteEvent) and recording.is_set():
                    received[(item.engine_id, item.entry_id)] = time.time()
        finally:
            await remote.close()

    try:
        procs = [HopsEngine(f"hops-{k}", url) for k in range(count)]
        for p in procs:
            p.read()
        follower = asyncio.create_task(follow())
        await asyncio.sleep(1.0)
        engine_recs: list[tuple[str, dict[str, list[float]]]] = []
        for _ in range(ROUNDS):
            recording.set()
            for p in procs:
                p.send("go")
            engine_recs += [(p.id, (await asyncio.to_thread(p.read))["rec"]) for p in procs]
            await asyncio.sleep(0.3)
            recording.clear()
        for p in procs:
            p.send("quit")
        for p in procs:
            await asyncio.to_thread(p.proc.wait, 30)
        follower.cancel()
    finally:
        redis.kill()
        shutil.rmtree(tmp, ignore_errors=True)
    report(count, engine_recs, reads, received)


def report(
    count: int,
    engine_recs: list[tuple[str, dict[str, list[float]]]],
    reads: dict[tuple[str, str], list[float]],
    received: dict[tuple[str, str], float],
) -> None:
    names = ("created → taken", "taken → sent", "sent → answered", "answered → read", "read → decoded", "total")
    hops: dict[str, list[float]] = {n: [] for n in names}
    sizes: list[float] = []
    late = 0
    for engine_id, rec in engine_recs:
        for entry_id, v in rec.items():
            r, got = reads.get((engine_id, entry_id)), received.get((engine_id, entry_id))
            if len(v) < 5 or r is None or len(r) < 3 or got is None:
                continue
            created, taken, sent, answered, size = v
            for name, ms in zip(
                names,
                (taken - created, sent - taken, answered - sent, r[1] - answered, r[2] - r[1], got - created),
                strict=True,
            ):
                hops[name].append(ms * 1000)
            sizes.append(size)
            late += r[0] > answered
    n = len(hops["total"])
    print(f"per-hop latency, {count} engine(s), {n} events joined ({ROUNDS} windows of {so.WINDOW_S:.0f} s); ms")
    print(f"{'hop':<18} {'p50':>8} {'p90':>8} {'p99':>8}")
    for name, values in hops.items():
        print(f"{name:<18} {so.pct(values, 50):>8.3f} {so.pct(values, 90):>8.3f} {so.pct(values, 99):>8.3f}")
    if n:
        print(
            f"events per batch: mean {sum(sizes) / n:.1f}; the follower's read was issued after the batch was "
            f"answered for {late / n:.0%} of events"
        )


def main() -> None:
    if len(sys.argv) == 4 and sys.argv[1] == "--engine":
        asyncio.run(engine_main(sys.argv[2], sys.argv[3]))
    else:
        asyncio.run(parent(int(sys.argv[1]) if len(sys.argv) > 1 else 3))


if __name__ == "__main__":
    main()
