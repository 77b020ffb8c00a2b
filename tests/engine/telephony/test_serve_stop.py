"""``ava-engine serve`` (the installed entry point) against the ARI emulator: a stop or a crash mid-call leaves
nothing behind in Asterisk.

SIGTERM during a long greeting: the caller hears the configured farewell instead of the rest of the greeting, then
the caller's channel, the media channel and the bridge are released, and serve exits 0 (its stop deadline forces
exit code 1). SIGKILL mid-call leaves them up (Asterisk keeps what a dead app made); the next ``serve`` on the same
config releases them once it is connected, and leaves alone what another engine's id scheme marks as that engine's
and anything the engine did not create.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import BinaryIO

import pytest
from emulator import AriEmulator
from state import Bridge, Channel

from engine.telephony.owned import ResourceIds
from tests.engine.telephony.phone import loud_seconds, speech

ROOT = Path(__file__).resolve().parents[3]
ENGINE_BIN = str(ROOT / ".venv" / "bin" / "ava-engine")
FAREWELL = "Closing now, goodbye."  # 1.6 s: room to spare in the stop budget on a busy machine
GREETING = " ".join(["Welcome to the help desk, this greeting is long on purpose."] * 12)


def config(emu: AriEmulator, tmp_path: Path, ports: int) -> Path:
    (tmp_path / "desk.yaml").write_text('greeting: "unused"\nintents: []\nfallback: "Sorry?"\n')
    path = tmp_path / "config.yaml"
    path.write_text(f"""engine:
  http: {{enabled: false}}
mcp: {{enabled: false}}
providers:
  desk: {{type: scripted, script: desk.yaml}}
contexts:
  desk:
    provider: desk
    prompt: A help desk.
    greeting: "{GREETING}"
    farewell: "{FAREWELL}"
    tools: [hangup_call]
asterisk:
  enabled: true
  ari_url: {emu.url}
  password: ari-secret
  default_context: desk
  rtp_port_start: {ports}
  rtp_port_end: {ports + 49}
""")
    return path


@pytest.fixture
async def serve(tmp_path: Path) -> AsyncIterator[Callable[[Path], object]]:
    procs: list[asyncio.subprocess.Process] = []

    async def start(path: Path) -> asyncio.subprocess.Process:
        with log_file(tmp_path / f"serve{len(procs)}.err") as err:
            proc = await asyncio.create_subprocess_exec(
                ENGINE_BIN, "--config", str(path), "serve", stdout=asyncio.subprocess.DEVNULL, stderr=err, cwd=tmp_path
            )
        procs.append(proc)
        return proc

    yield start
    for proc in procs:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()


def log_file(path: Path) -> BinaryIO:
    return path.open("wb")


def stderr_of(tmp_path: Path, n: int) -> str:
    return (tmp_path / f"serve{n}.err").read_text(errors="replace")


def free_port_base() -> int:
    """A base for 50 RTP ports that no other test run is likely to use (the kernel's pick, rounded)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    return min(port - port % 50, 65535 - 50)


async def call_in_progress(emu: AriEmulator) -> Channel:
    """A caller in the engine's bridge, hearing the greeting (a second of it has arrived)."""
    await emu.wait_subscribers(within_s=60)
    caller = await emu.incoming_call("ava", "Robin", "1001")
    await emu.wait_event("ChannelEnteredBridge", caller.id, within_s=30)
    phone = emu.media_for(caller.id)
    await phone.wait_audio(50, within_s=30)
    return caller


async def test_sigterm_mid_greeting_says_farewell_releases_everything_and_exits_0(
    serve: Callable[[Path], object], tmp_path: Path
) -> None:
    expected = loud_seconds(speech(FAREWELL))
    async with AriEmulator() as emu:
        proc: asyncio.subprocess.Process = await serve(config(emu, tmp_path, free_port_base()))  # type: ignore[misc]
        caller = await call_in_progress(emu)
        phone = emu.media_for(caller.id)
        bridge = emu.world.channels[caller.id].bridge
        media = next(c for c in emu.world.bridges[str(bridge)].channels if c != caller.id)
        heard = len(phone.capture)
        sent = len(emu.world.requests)
        proc.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(proc.wait(), 30)
        err = stderr_of(tmp_path, 0)
        assert code == 0, err
        assert "Traceback" not in err

        requests = [(m, p) for m, p, _ in emu.world.requests[sent:]]
        assert ("DELETE", f"/channels/{caller.id}") in requests
        assert ("DELETE", f"/channels/{media}") in requests
        assert ("DELETE", f"/bridges/{bridge}") in requests
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []
        # the farewell, not the rest of the (much longer) greeting, reached the phone before the hang-up
        after = phone.audio()[heard * 160 :]
        assert 0.8 * expected <= loud_seconds(after) <= expected + 1.0, (loud_seconds(after), expected)
        assert "farewell" in err and FAREWELL in err


def other_engines_things(emu: AriEmulator) -> list[str]:
    """What the restarted engine must leave: another engine's bridge, one of a still running process of this same
    engine (serve's id scheme: no engine.id, so this host and the app), and a bridge and a caller in the app that
    no id scheme claims."""
    alive = os.getppid()  # a process that surely runs while the test does
    other = f"ava-call-0badc0de.{alive}-1234.5"
    running = ResourceIds(ResourceIds.for_engine(None, "ava").owner, alive).make("call", "1234.6")
    for bridge in (other, running, "dialplan-conference"):
        emu.world.bridges[bridge] = Bridge(bridge, ("mixing",))
    emu.world.add_channel(Channel("1234.5", "PJSIP/2000-00000099", "Up", app="ava"))
    return [other, running, "dialplan-conference", "1234.5"]


async def test_a_restarted_engine_releases_what_a_killed_one_left(
    serve: Callable[[Path], object], tmp_path: Path
) -> None:
    async with AriEmulator() as emu:
        path = config(emu, tmp_path, free_port_base())
        first: asyncio.subprocess.Process = await serve(path)  # type: ignore[misc]
        caller = await call_in_progress(emu)
        bridge = str(emu.world.channels[caller.id].bridge)
        media = next(c for c in emu.world.bridges[bridge].channels if c != caller.id)
        first.kill()
        await first.wait()
        assert {caller.id, media} <= set(emu.world.channels) and bridge in emu.world.bridges  # Asterisk kept them
        keep = other_engines_things(emu)

        sent = len(emu.world.requests)
        second: asyncio.subprocess.Process = await serve(path)  # type: ignore[misc]
        await emu.wait_subscribers(within_s=60)
        await emu.wait_event("ChannelDestroyed", caller.id, within_s=30)
        await emu.wait_event("ChannelDestroyed", media, within_s=30)
        await emu.wait_event("BridgeDestroyed", bridge_id=bridge, within_s=30)
        requests = [(m, p) for m, p, _ in emu.world.requests[sent:]]
        assert ("GET", "/channels") in requests and ("GET", "/bridges") in requests
        assert ("DELETE", f"/bridges/{bridge}") in requests
        assert set(keep) <= set(emu.world.channels) | set(emu.world.bridges), requests
        assert second.returncode is None
        # the restarted engine takes calls again, and its own stop leaves nothing of its own
        caller2 = await call_in_progress(emu)
        second.send_signal(signal.SIGTERM)
        assert await asyncio.wait_for(second.wait(), 30) == 0, stderr_of(tmp_path, 1)
        assert caller2.id not in emu.world.channels
        assert sorted(emu.world.leftovers()["bridges"]) == sorted(keep[:3])
        assert [c for c in emu.world.channels] == ["1234.5"]
        assert "released" in stderr_of(tmp_path, 1)
        assert emu.violations == []
