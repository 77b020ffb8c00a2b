"""Engine time of a realtime provider's tool call: the provider's "call this function" message to the engine's result.

For each of the four realtime adapters, a real Engine holds a call against the provider's loopback fake (the test
fakes in tests/fixtures/fake_providers, which check every client message against the official SDK's types). The
fakes run in a **process of their own** (``--peers``), as a real provider runs elsewhere: their scripts and their
SDK validation (OpenAI's fake spends ~3 ms of CPU per round on a whole scripted response) never share the engine's
event loop, so the window holds only the engine and the socket. The fake stamps the moment it sends the message
that makes the engine execute (Gemini ``toolCall``, Deepgram ``FunctionCallRequest``, ElevenLabs
``client_tool_call``, OpenAI's ``response.done`` — OpenAI Realtime executes only once the response was not
cancelled) and the moment the result arrives (``toolResponse``, ``FunctionCallResponse``, ``client_tool_result``,
``conversation.item.create`` with ``function_call_output``), both on its own clock. That round trip includes the
loopback WebSocket both ways, so the same run also measures an **echo** over the same kind of socket (the fake
process sends a call-shaped message, a ``RealtimeSocket`` client in the engine's process answers with a JSON
message of the same shape at once), and the **direct** call of the same in-process tool. What the engine adds is
round trip − echo − direct. Rounds rotate the providers, so drift on the shared machine spreads over all of them.
Goal (issue 14): ≤ 1 ms added at p50.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "fake_providers"))

from pydantic import SecretStr
from realtime_deepgram_fake import DeepgramFake
from realtime_deepgram_harness import provider_config as deepgram_config
from realtime_elevenlabs_fake import ElevenLabsFake, ElevenLabsRestFake
from realtime_elevenlabs_world import settings as elevenlabs_settings
from realtime_gemini_fake import API_KEY as GEMINI_KEY
from realtime_gemini_fake import GeminiLiveFake
from realtime_openai_fake import OpenAIRealtimeFake
from realtime_openai_harness import provider_config as openai_config
from realtime_openai_steps import Calls, Say
from realtime_ws import RealtimeFake

from engine.app import Engine
from engine.config.models import ContextConfig, EngineConfig, HttpConfig, ProviderConfig, Settings
from engine.config.models.recording import RecordingConfig
from engine.core.stats import percentiles
from engine.realtime.session import PCMU_8K, RealtimeSession
from engine.realtime.socket import RealtimeSocket
from engine.tools.base import FunctionTool, ToolDefinition, ToolExecutionContext, ToolParameter, ToolResult

ROUNDS = 10
PER_ROUND = 40  # calls per provider per round
WARMUP = 20
ARGS = {"text": "hello"}
#: Before OpenAI's ``response.done``: time for the engine to read the response's earlier events first (each takes it
#: ~50 µs; the real service sends them in one burst). 5 ms here let the engine's process go idle before the window
#: opened, and waking it cost ~0.8 ms inside the window — a cost no other provider's window paid.
PAUSE_S = 0.0005
#: The calls' recordings (on, as by default) go here, not into the user's own recordings folder.
RECORDINGS = tempfile.mkdtemp(prefix="ava-bench-recordings-")


async def echo(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
    return ToolResult.success(args["text"], {"echo": args["text"]})


def echo_tool() -> FunctionTool:
    params = (ToolParameter("text", "string", "What to echo", required=True, max_length=100),)
    return FunctionTool(ToolDefinition("echo", "Echo the text.", parameters=params), echo)


class Stamps:
    """Send and arrival times of one round trip at a time (the fake's loop is the engine's loop)."""

    def __init__(self) -> None:
        self.sent = 0.0
        self.arrived = asyncio.Event()
        self.at = 0.0

    def arm(self) -> None:
        self.arrived.clear()

    def send_now(self) -> None:
        self.sent = time.perf_counter()

    def result(self) -> None:
        self.at = time.perf_counter()
        self.arrived.set()

    async def elapsed(self) -> float:
        await asyncio.wait_for(self.arrived.wait(), 10)
        return self.at - self.sent


def timed(cls: type[RealtimeFake], is_result: Callable[[dict[str, Any]], bool]) -> Any:
    """``cls`` whose arrival stamp is taken as a result message is decoded, before the fake's SDK validation."""

    class Timed(cls):
        stamps = Stamps()

        def validate(self, msg: dict[str, Any]) -> None:
            if is_result(msg):
                self.stamps.result()
            super().validate(msg)

    return Timed


class TimedOpenAI(timed(OpenAIRealtimeFake, lambda m: m.get("item", {}).get("type") == "function_call_output")):  # type: ignore[misc]
    """OpenAI executes a call once ``response.done`` says the response was not cancelled: the send stamp is there."""

    async def _send(self, kind: str, **fields: Any) -> None:
        output = fields.get("response", {}).get("output", []) if kind == "response.done" else []
        if any(item.get("type") == "function_call" for item in output):
            await asyncio.sleep(PAUSE_S)  # the engine reads the call's earlier events first, as over a real network
            self.stamps.send_now()
        await super()._send(kind, **fields)


class Target:
    """One provider: its fake, an engine holding one call on it, and how the fake asks for one tool call."""

    def __init__(self, name: str, fake: Any, provider: ProviderConfig, ask: Callable[[str], Awaitable[None]]) -> None:
        self.name, self.fake, self.provider, self.ask = name, fake, provider, ask
        self.samples: list[float] = []

    async def call(self, cid: str) -> float:
        self.fake.stamps.arm()
        await self.ask(cid)
        return await self.fake.stamps.elapsed()


@contextlib.asynccontextmanager
async def engine_call(provider: ProviderConfig) -> AsyncIterator[tuple[Engine, RealtimeSession]]:
    settings = Settings(
        engine=EngineConfig(http=HttpConfig(enabled=False)),
        providers={"rt": provider},
        contexts={"desk": ContextConfig(provider="rt", prompt="You are a bench.", greeting=None, tools=["echo"])},
        recording=RecordingConfig(dir=RECORDINGS),  # recorded as by default, not into the user's own folder
    )
    engine = Engine(settings, extra_tools=[echo_tool()])
    async with engine:
        _, live = await engine.calls.start_realtime_call("desk", audio=PCMU_8K)

        async def drain() -> None:
            async for _ in live.events():
                pass

        reader = asyncio.create_task(drain())
        try:
            yield engine, live
        finally:
            await live.aclose()
            reader.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await reader


def gemini_target() -> Target:
    fake = timed(GeminiLiveFake, lambda m: "toolResponse" in m)()

    async def ask(cid: str) -> None:
        fake.stamps.send_now()
        await fake.tool_call((cid, "echo", ARGS))

    cfg = ProviderConfig(
        type="gemini_live",
        model="gemini-live-test",
        base_url="",
        api_key=SecretStr(GEMINI_KEY),
        voice="Kore",
        timeout_ms=5000,
        options={"reconnect_backoff_ms": 1, "handle_wait_ms": 300},
    )
    return Target("gemini_live", fake, cfg, ask)


def deepgram_target() -> Target:
    fake = timed(DeepgramFake, lambda m: m.get("type") == "FunctionCallResponse")()

    async def ask(cid: str) -> None:
        fake.stamps.send_now()
        await fake.request((cid, "echo", '{"text": "hello"}', True))

    return Target("deepgram_agent", fake, deepgram_config(""), ask)


def openai_target() -> Target:
    fake = TimedOpenAI()

    async def ask(cid: str) -> None:
        if fake.active is not None and fake.active.task is not None:  # the short answer to the last result
            await fake.active.task
        fake.script.extend([Calls([("echo", ARGS, cid)]), Say("ok", audio_ms=20)])
        await fake.caller_turn("echo hello")  # stamp: response.done of the Calls response (TimedOpenAI._send)

    return Target("openai_realtime", fake, openai_config(""), ask)


def elevenlabs_target(rest: ElevenLabsRestFake, fake: Any) -> Target:
    async def ask(cid: str) -> None:
        fake.stamps.send_now()
        await fake.tool_call("echo", ARGS, cid)

    return Target("elevenlabs_agent", fake, elevenlabs_settings(rest).providers["el"], ask)


class EchoPeer:
    """The socket baseline's far side (in the peers' process): sends a call-shaped message and stamps the
    result-shaped answer of the engine process's ``echo_answerer``."""

    def __init__(self) -> None:
        self.fake = timed(RealtimeFake, lambda m: m.get("type") == "result")()
        self.fake.path = "/echo"
        self.samples: list[float] = []

    async def call(self, cid: str) -> float:
        self.fake.stamps.arm()
        self.fake.stamps.send_now()
        await self.fake.send({"toolCall": {"functionCalls": [{"id": cid, "name": "echo", "args": ARGS}]}})
        return float(await self.fake.stamps.elapsed())


@contextlib.asynccontextmanager
async def echo_answerer(url: str) -> AsyncIterator[None]:
    """A ``RealtimeSocket`` client answering each call-shaped message at once (JSON parsed and written as the
    adapters do, nothing else)."""
    sock = await RealtimeSocket.open("echo", url, {}, 5.0)

    async def answer() -> None:
        async for m in sock.messages():
            if isinstance(m, dict):
                call = m["toolCall"]["functionCalls"][0]
                await sock.send_json({"type": "result", "id": call["id"], "name": call["name"], "output": "hello"})

    task = asyncio.create_task(answer())
    try:
        yield
    finally:
        await sock.close()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def direct_calls(engine: Engine, n: int) -> list[float]:
    from engine.sessions.session import CallSession

    tool = echo_tool()
    session = CallSession(call_id="bench", context="desk", provider="rt")
    ctx = ToolExecutionContext("bench", session, engine.settings, engine.bus.publish)
    out = []
    for _ in range(n):
        t = time.perf_counter()
        await tool.execute(ARGS, ctx)
        out.append(time.perf_counter() - t)
    return out


def ms(values: list[float]) -> tuple[float, float]:
    p50, p99 = percentiles(values, 0.5, 0.99)
    return p50 * 1000, p99 * 1000


async def peers() -> None:
    """The fakes' process: serve, say where (one JSON line), wait for the engines, run the rounds, report."""
    ids = (f"call_{i:05d}" for i in itertools.count())
    echo_peer = EchoPeer()
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(echo_peer.fake)
        el_ws = await stack.enter_async_context(
            timed(ElevenLabsFake, lambda m: m.get("type") == "client_tool_result")()
        )
        el_rest = await stack.enter_async_context(ElevenLabsRestFake(el_ws))
        targets = [openai_target(), gemini_target(), deepgram_target(), elevenlabs_target(el_rest, el_ws)]
        for t in targets[:3]:
            await stack.enter_async_context(t.fake)
        urls = {t.name: t.fake.url for t in targets[:3]} | {"elevenlabs_agent": el_rest.url, "echo": echo_peer.fake.url}
        print(json.dumps(urls), flush=True)
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.readline)  # the engines hold their calls
        for t in targets:
            for _ in range(WARMUP):
                await t.call(next(ids))
        for _ in range(WARMUP):
            await echo_peer.call(next(ids))
        for r in range(ROUNDS):
            order = targets[r % len(targets) :] + targets[: r % len(targets)]
            for _ in range(PER_ROUND):
                echo_peer.samples.append(await echo_peer.call(next(ids)))
            for t in order:
                for _ in range(PER_ROUND):
                    t.samples.append(await t.call(next(ids)))
        errors = {t.name: t.fake.errors for t in targets if t.fake.errors}
        samples = {t.name: t.samples for t in targets} | {"echo": echo_peer.samples}
        print(json.dumps({"samples": samples, "errors": errors}, default=str), flush=True)
        await loop.run_in_executor(None, sys.stdin.readline)  # the engines have hung up: the fakes may go


def providers(urls: dict[str, str]) -> dict[str, ProviderConfig]:
    gemini = ProviderConfig(
        type="gemini_live",
        model="gemini-live-test",
        base_url=urls["gemini_live"],
        api_key=SecretStr(GEMINI_KEY),
        voice="Kore",
        timeout_ms=5000,
        options={"reconnect_backoff_ms": 1, "handle_wait_ms": 300},
    )
    return {
        "openai_realtime": openai_config(urls["openai_realtime"]),
        "gemini_live": gemini,
        "deepgram_agent": deepgram_config(urls["deepgram_agent"]),
        "elevenlabs_agent": elevenlabs_settings(cast(Any, SimpleNamespace(url=urls["elevenlabs_agent"]))).providers[
            "el"
        ],
    }


async def main() -> None:
    child = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--peers", stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE
    )
    assert child.stdin is not None and child.stdout is not None
    urls = json.loads(await child.stdout.readline())
    engines: list[Engine] = []
    async with contextlib.AsyncExitStack() as stack:
        for provider in providers(urls).values():
            engine, _ = await stack.enter_async_context(engine_call(provider))
            engines.append(engine)
        await stack.enter_async_context(echo_answerer(urls["echo"]))
        child.stdin.write(b"go\n")
        await child.stdin.drain()
        report = json.loads(await child.stdout.readline())
        direct = await direct_calls(engines[0], ROUNDS * PER_ROUND)
    child.stdin.write(b"done\n")
    await child.stdin.drain()
    await child.wait()
    samples: dict[str, list[float]] = report["samples"]
    echo = samples.pop("echo")

    d50, d99 = ms(direct)
    e50, e99 = ms(echo)
    print(f"{ROUNDS} rounds × {PER_ROUND} calls per provider, rotating order; one in-process tool (echo)")
    print("the providers' fakes in a process of their own; round trips on their clock")
    print(f"{'':34} {'p50 ms':>8} {'p99 ms':>8}")
    print(f"{'direct tool.execute':34} {d50:8.3f} {d99:8.3f}")
    print(f"{'echo over the same socket':34} {e50:8.3f} {e99:8.3f}")
    print(f"{'provider':18} {'round trip p50':>15} {'p99':>8} {'added p50':>10} {'(rt − echo) / direct p50':>25}")
    for name, values in samples.items():
        r50, r99 = ms(values)
        print(f"{name:18} {r50:15.3f} {r99:8.3f} {r50 - e50 - d50:10.3f} {(r50 - e50) / d50:24.0f}x")
    print("added = round trip − echo − direct (p50s); goal: ≤ 1 ms added at p50")
    if report["errors"]:
        print(f"the fakes refused client messages: {report['errors']}")
        raise SystemExit(1)


if __name__ == "__main__":
    asyncio.run(peers() if sys.argv[1:] == ["--peers"] else main())
