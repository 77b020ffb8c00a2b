"""An engine that needs no HTTP server, no Redis store and no audio does not import aiohttp, redis-py or numpy
(0.5 s together, paid by every ``ava-engine`` command before it did anything): each is imported where it is first
needed — the HTTP server (``serve``), a ``redis://`` store, a call with audio."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

CODE = """
import asyncio, sys
from engine.app import Engine
from engine.config.models import Settings
from engine.sessions.session import CallSession

async def main():
    engine = Engine(Settings.model_validate({"engine": {"store": STORE}}), serve_http=False)
    await engine.start()
    try:
        session = CallSession(call_id="c", context="default", provider="p")
        session.shown_tools = frozenset({"hangup_call"})
        result = await engine.execute_tool(session, "hangup_call", {})
        assert result.status != "rejected", result.message  # the tool path ran
    finally:
        await engine.stop()
    print(sorted(m for m in ("aiohttp", "redis", "numpy") if m in sys.modules))

asyncio.run(main())
"""


def _loaded(store: str) -> str:
    code = CODE.replace("STORE", repr(store))
    p = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return p.stdout.strip().splitlines()[-1]


def test_an_engine_on_the_memory_store_without_http_loads_none_of_them() -> None:
    assert _loaded("memory") == "[]"
