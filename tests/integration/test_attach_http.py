"""``--attach http://`` against a real ``ava-engine serve`` (the installed entry point) taking a phone call from the
ARI emulator: the client follows the call's events in order, resumes after a cut connection with nothing missed or
repeated, drives the call with commands and sees their effect in the events; wrong tokens, foreign origins and hosts
are refused; no configured secret crosses the socket; a killed engine is lost within three heartbeats, a stopped one
at once and cleanly."""

from __future__ import annotations

import asyncio
import contextlib
import json
import select
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from engine.remote.base import EngineJoined, EngineLost, Followed, RemoteError, RemoteEvent
from engine.remote.http_client import HttpEngines
from tests.engine.store.redis_peer import eventually

ROOT = Path(__file__).resolve().parents[2]
ENGINE_BIN = str(ROOT / ".venv" / "bin" / "ava-engine")
ARI = ROOT / "tests" / "fixtures" / "ari"
if str(ARI) not in sys.path:
    sys.path.insert(0, str(ARI))
from emulator import AriEmulator  # noqa: E402

SCRIPT = ROOT / "tests" / "engine" / "telephony" / "scripts" / "desk.yaml"
TOKEN = "attach-token-5c2d9e"
CANARY = "sk-canary-attach-3f81b0"
ARI_PASSWORD = "ari-canary-pw-77"
HEARTBEAT_S = 0.3
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def write_config(tmp_path: Path, ari_url: str, rtp: int) -> Path:
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        json.dumps(
            {
                "engine": {"id": "remote-a", "heartbeat_s": HEARTBEAT_S, "http": {"port": 0, "auth_token": TOKEN}},
                "providers": {
                    "desk": {"type": "scripted", "script": str(SCRIPT)},
                    "spare": {"type": "openai_chat", "model": "m", "api_key": CANARY},
                },
                "contexts": {
                    "desk": {"provider": "desk", "prompt": "A help desk.", "tools": ["transfer", "hangup_call"]}
                },
                "asterisk": {
                    "enabled": True,
                    "ari_url": ari_url,
                    "password": ARI_PASSWORD,
                    "default_context": "desk",
                    "rtp_port_start": rtp,
                    "rtp_port_end": rtp + 99,
                },
            }
        )
    )
    return cfg


@contextlib.contextmanager
def serve(cfg: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    proc = subprocess.Popen(
        [ENGINE_BIN, "--config", str(cfg), "--json", "serve", "--no-watch"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cfg.parent,
    )
    try:
        assert proc.stdout is not None
        ready, _, _ = select.select([proc.stdout], [], [], 60)
        assert ready, "serve printed nothing"
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else ""
        yield proc, json.loads(line)["http"]
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=10)


class Proxy:
    """A loopback TCP relay in front of the engine whose connections the test can cut (a dropped socket)."""

    def __init__(self, port: int) -> None:
        self.target = port
        self.open = True
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()

    async def start(self) -> str:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if not self.open:
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target)
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))

    def cut(self) -> None:
        """Drop every relayed connection and refuse new ones until ``restore``."""
        self.open = False
        for w in self._writers:
            if w.transport is not None:
                w.transport.abort()
        self._writers.clear()

    def restore(self) -> None:
        self.open = True

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()


@dataclass
class Follower:
    """Collects what ``HttpEngines.follow`` yields, in a task; ``wait_for`` awaits a matching item."""

    client: HttpEngines
    items: list[Followed] = field(default_factory=list)
    _new: asyncio.Event = field(default_factory=asyncio.Event)
    _task: asyncio.Task[None] | None = None

    def start(self) -> None:
        async def run() -> None:
            async for item in self.client.follow():
                self.items.append(item)
                self._new.set()

        self._task = asyncio.create_task(run())

    async def wait_for(self, what: str, match: Any, within_s: float = 20.0) -> Followed:
        try:
            async with asyncio.timeout(within_s):
                while True:
                    found = next((i for i in self.items if match(i)), None)
                    if found is not None:
                        return found
                    if self._task is not None and self._task.done():
                        self._task.result()
                    self._new.clear()
                    await self._new.wait()
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}; got {self.items}") from None

    def events(self) -> list[RemoteEvent]:
        return [i for i in self.items if isinstance(i, RemoteEvent)]

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        await self.client.close()


def of_type(kind: str, **fields: Any) -> Any:
    def match(item: Followed) -> bool:
        return (
            isinstance(item, RemoteEvent)
            and item.event.type == kind
            and all(getattr(item.event, k, None) == v for k, v in fields.items())
        )

    return match


@pytest.fixture
async def emulator() -> AsyncIterator[AriEmulator]:
    async with AriEmulator(password=ARI_PASSWORD) as emu:
        yield emu


async def raw_stream(base: str, dump: list[str], stop: asyncio.Event) -> None:
    """Every text message of one uninterrupted stream, as sent (for the canary and the order of events)."""
    async with aiohttp.ClientSession() as s, s.ws_connect(base + "/events", headers=AUTH) as ws:
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.2):
                    msg = await ws.receive()
                    if msg.type != aiohttp.WSMsgType.TEXT:
                        return
                    dump.append(msg.data)


async def test_follow_resume_commands_refusals_canary_and_kill(tmp_path: Path, emulator: AriEmulator) -> None:
    cfg = write_config(tmp_path, emulator.url, 44700)
    with serve(cfg) as (proc, base):
        await emulator.wait_subscribers()
        dump: list[str] = []
        stop_raw = asyncio.Event()
        raw = asyncio.create_task(raw_stream(base, dump, stop_raw))
        proxy = Proxy(int(base.rsplit(":", 1)[1]))
        follower = Follower(HttpEngines(await proxy.start(), token=TOKEN))
        direct = HttpEngines(base, token=TOKEN)
        try:
            await direct.connect()
            follower.start()
            joined = await follower.wait_for("joined", lambda i: isinstance(i, EngineJoined))
            assert isinstance(joined, EngineJoined)
            info = joined.info
            assert (info.id, info.contexts, info.live_calls, info.draining) == ("remote-a", ("desk",), 0, False)
            assert info.heartbeat_s == HEARTBEAT_S and info.raw["pid"] == proc.pid

            # a phone call: its events arrive in order
            await emulator.incoming_call("ava", caller_number="1001")
            started = await follower.wait_for("call.started", of_type("call.started"))
            call_id = started.event.call_id  # type: ignore[union-attr]
            await follower.wait_for("the greeting", of_type("transcript.added", call_id=call_id, role="assistant"))

            # commands, answered by the engine's dispatcher and seen in the events
            answer = await follower.client.send("remote-a", "set_tier", {"call_id": call_id, "tier": "deep"})
            assert answer["tier"] == "deep" and answer["call"]["tier"] == "deep"
            await follower.wait_for("tier.changed", of_type("tier.changed", call_id=call_id, new="deep"))

            # the follower's connection drops; meanwhile the call changes; it resumes where it was
            proxy.cut()  # aborts both sides at once and refuses reconnects: what follows is only seen on resuming
            await direct.send(
                "remote-a", "set_tool_enabled", {"call_id": call_id, "exposed_name": "transfer", "enabled": False}
            )
            await direct.send("remote-a", "whisper", {"call_id": call_id, "text": f"the key is {CANARY}"})
            proxy.restore()
            await follower.wait_for("tools.changed", of_type("tools.changed", call_id=call_id))
            steer = await follower.wait_for("steering.injected", of_type("steering.injected", call_id=call_id))
            assert CANARY not in steer.event.text  # type: ignore[union-attr]

            await follower.client.send("remote-a", "end_call", {"call_id": call_id, "reason": f"done {CANARY}"})
            await follower.wait_for("call.ended", of_type("call.ended", call_id=call_id))
            with pytest.raises(RemoteError, match=f"no live call '{call_id}' on engine remote-a"):
                await follower.client.send("remote-a", "end_call", {"call_id": call_id})

            # nothing missed, nothing twice: the resumed follower saw exactly what an uninterrupted stream saw
            await asyncio.sleep(3 * HEARTBEAT_S)
            stop_raw.set()
            await raw
            sent = [json.loads(m) for m in dump]
            streamed = [m["entry_id"] for m in sent if "entry_id" in m]
            seqs = [m["seq"] for m in sent if "entry_id" in m]
            assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
            followed = [e.entry_id for e in follower.events()]
            assert followed[: len(streamed)] == streamed and follower.client.gaps == []
            assert follower.client.reconnects >= 1
            assert sum(1 for i in follower.items if isinstance(i, EngineJoined)) == 1  # a short cut is no loss
            types = [e.event.type for e in follower.events()]
            assert types.index("call.started") < types.index("tier.changed") < types.index("tools.changed")
            assert types.index("tools.changed") < types.index("call.ended")

            # the canary: no configured secret (a provider key, the ARI password) in anything sent
            text = "\n".join(dump)
            assert "call.ended" in text and "steering.injected" in text
            assert CANARY not in text and ARI_PASSWORD not in text and TOKEN not in text

            # refusals on the running engine
            async with aiohttp.ClientSession() as s:
                for headers, status in (
                    ({}, 401),
                    ({"Authorization": "Bearer wrong"}, 401),
                    ({**AUTH, "Origin": "https://evil.example"}, 403),
                    ({**AUTH, "Host": "rebind.example"}, 421),
                ):
                    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                        await s.ws_connect(base + "/events", headers=headers)
                    assert refused.value.status == status
                    async with s.post(base + "/control/calls_info", json={}, headers=headers) as r:
                        assert r.status == status
                        assert TOKEN not in await r.text()

            # kill -9: lost (not cleanly) once three heartbeats went by without one
            proc.send_signal(signal.SIGKILL)
            lost = await follower.wait_for("EngineLost", lambda i: isinstance(i, EngineLost), within_s=15)
            assert isinstance(lost, EngineLost) and lost.engine_id == "remote-a" and not lost.clean
            assert "no heartbeat for" in lost.reason
            silent = float(lost.reason.split("no heartbeat for ")[1].split(" s")[0])
            assert silent >= 3 * HEARTBEAT_S
            assert await follower.client.engines() == {}
        finally:
            stop_raw.set()
            raw.cancel()
            with contextlib.suppress(BaseException):
                await raw
            await follower.stop()
            await direct.close()
            await proxy.stop()


async def test_a_stopping_engine_is_lost_cleanly_and_a_restarted_one_joins_again(
    tmp_path: Path, emulator: AriEmulator
) -> None:
    cfg = write_config(tmp_path, emulator.url, 44800)
    with serve(cfg) as (proc, base):
        port = base.rsplit(":", 1)[1]
        follower = Follower(HttpEngines(base, token=TOKEN))
        follower.start()
        try:
            await follower.wait_for("joined", lambda i: isinstance(i, EngineJoined))
            await follower.client.send("remote-a", "set_tier", {"call_id": None, "tier": "fast"})
            await follower.wait_for("tier.changed", of_type("tier.changed", new="fast"))
            proc.send_signal(signal.SIGTERM)
            lost = await follower.wait_for("EngineLost", lambda i: isinstance(i, EngineLost))
            assert isinstance(lost, EngineLost) and lost.clean and "engine stopping" in lost.reason
            assert proc.wait(10) == 0
            cfg.write_text(cfg.read_text().replace('"port": 0', f'"port": {port}'))  # the same address again
            with serve(cfg):
                again = await follower.wait_for(
                    "joined again", lambda i: isinstance(i, EngineJoined) and follower.items.index(i) > 0
                )
                assert isinstance(again, EngineJoined) and again.info.id == "remote-a"
                # the client resumed after its last entry; the new process never had what came before: it says so
                await eventually(lambda: follower.client.gaps, what="the gap notice")
                assert len(follower.client.gaps) == 1 and "missed" in follower.client.gaps[0]["reason"]
        finally:
            await follower.stop()
