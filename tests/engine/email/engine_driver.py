"""A real engine in its own process for the outbox's fault test: ``python engine_driver.py CONFIG FIRST LAST``.

It runs calls FIRST..LAST of the scripted context ``desk`` (each said something and ended), prints ``ended N`` after
each, then ``done``, and keeps running (the outbox keeps retrying) until it is killed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from engine.app import Engine
from engine.config import load_settings


async def main(config: Path, first: int, last: int) -> None:
    engine = Engine(load_settings(config), config_path=config)
    await engine.start()
    for n in range(first, last + 1):
        call = await engine.start_call("desk", caller_name=f"caller {n}", caller_number=f"+1555000{n:04d}")
        await engine.user_said(call.call_id, f"this is call number {n}")
        await engine.end_call(call.call_id, "caller hung up")
        print(f"ended {n}", flush=True)
    print("done", flush=True)
    await asyncio.Event().wait()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])))
