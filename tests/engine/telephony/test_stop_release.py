"""What the engine releases in Asterisk when it stops and when it starts, around calls a human has.

A call transferred to a human agent stays up when the engine stops: caller, agent and their bridge are left to
them, only the AI's media channel goes. On start, what an earlier run of this engine left is released by its ids,
except a call an agent has, another engine's resources, a still running process's, and what no id scheme claims.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from emulator import AriEmulator
from state import Bridge, Channel

from engine.telephony.ari import AriClient
from engine.telephony.farewell import farewell_text
from engine.telephony.owned import ResourceIds, parse, release_leftovers
from tests.engine.telephony.phone import desk_engine, loud_seconds, speech, until_quiet
from tests.engine.voice.helpers import demo_settings


def gone_pid() -> int:
    """The id of a process that has ended."""
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


async def test_a_call_handed_to_an_agent_stays_up_when_the_engine_stops(tmp_path: Path) -> None:
    say = speech("transfer me to support")
    async with AriEmulator() as emu:
        async with desk_engine(emu, tmp_path, 42600):
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            media = next(
                c for c in emu.world.bridges[str(emu.world.channels[caller.id].bridge)].channels if c != caller.id
            )
            await until_quiet(emu, caller.id)
            phone = emu.media_for(caller.id)
            await phone.speak(say)
            await phone.silence(1.0)
            answered = await emu.wait_event("StasisStart", within_s=20, name_prefix="PJSIP/6000")
            agent = answered["channel"]["id"]
            await emu.wait_event("ChannelLeftBridge", media, within_s=20)
            await emu.wait_event("ChannelEnteredBridge", agent, within_s=20)
            bridge = str(emu.world.channels[caller.id].bridge)
        # the engine has stopped
        await emu.wait_event("ChannelDestroyed", media)
        assert sorted(emu.world.bridges[bridge].channels) == sorted([caller.id, agent])
        assert sorted(emu.world.channels) == sorted([caller.id, agent])
        assert ("DELETE", f"/channels/{caller.id}") not in [(m, p) for m, p, _ in emu.world.requests]
        assert emu.violations == []


async def test_a_farewell_that_cannot_fit_the_stop_budget_is_not_played_and_the_caller_is_hung_up(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with AriEmulator() as emu:
        async with desk_engine(emu, tmp_path, 42700) as engine:
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            phone = emu.media_for(caller.id)
            await phone.wait_audio(25, within_s=20)  # the greeting plays
            engine.settings.contexts["desk"].farewell = "Goodbye. " * 20
            heard = len(phone.capture)
        await emu.wait_event("ChannelDestroyed", caller.id)
        assert loud_seconds(phone.audio()[heard * 160 :]) < 0.5  # neither the rest of the greeting nor a farewell
        assert "does not fit the stop budget" in caplog.text
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []


def test_the_farewell_is_the_contexts_else_the_hangup_tools(tmp_path: Path) -> None:
    settings = demo_settings(tmp_path)
    assert farewell_text(settings, "demo") == settings.tools.hangup.farewell == "Thank you for calling. Goodbye!"
    settings.contexts["demo"].farewell = "Bye from the demo."
    assert farewell_text(settings, "demo") == "Bye from the demo."
    assert farewell_text(settings, None) == "Thank you for calling. Goodbye!"


def test_ids_name_their_engine_process_and_caller() -> None:
    ids = ResourceIds("0123abcd", 4242)
    made = ids.make("xfer", "pbx-1700000000.17", 3)
    assert made.startswith("ava-xfer-")
    owned = parse(made)
    assert owned is not None and (owned.kind, owned.owner, owned.pid, owned.caller) == (
        "xfer",
        "0123abcd",
        4242,
        "pbx-1700000000.17",
    )
    assert parse("ava-1700000000.17") is None and parse("ava-em-nothex.1-x") is None
    assert ResourceIds.for_engine("engine-a", "ava").owner != ResourceIds.for_engine("engine-b", "ava").owner
    assert ResourceIds.for_engine("engine-a", "ava").owner != ResourceIds.for_engine("engine-a", "ivr").owner


async def test_on_start_only_this_engines_leftovers_go_and_a_call_an_agent_has_stays() -> None:
    dead = gone_pid()
    mine = ResourceIds("0123abcd", 999_999_999)  # this engine now; ``dead`` was its earlier process
    earlier = ResourceIds(mine.owner, dead)
    async with AriEmulator() as emu, AriClient(emu.url, "ava", "ari-secret", "ava") as ari:
        w = emu.world

        def call(ids: ResourceIds, caller: str, *bridged: str, aside: str | None = None) -> str:
            """A caller in its call's bridge with ``bridged`` channels; ``aside``: a media channel out of it."""
            bridge = ids.make("call", caller)
            w.bridges[bridge] = Bridge(bridge, ("mixing",), channels=[caller, *bridged])
            for cid in (caller, *bridged):
                w.add_channel(Channel(cid, f"PJSIP/{cid}", "Up", app="ava", bridge=bridge))
            if aside is not None:
                w.add_channel(Channel(aside, f"UnicastRTP/{aside}", "Up", kind="unicastrtp", app="ava"))
            return bridge

        ai_call = call(earlier, "100.1", earlier.make("em", "100.1"))
        agent = earlier.make("xfer", "100.2", 1)
        human = call(earlier, "100.2", agent, aside=earlier.make("em", "100.2"))  # the AI's media already left
        same_pid = call(mine, "100.3", mine.make("em", "100.3"))  # a container restart reuses the pid
        running = call(ResourceIds(mine.owner, 1), "100.4")  # pid 1 runs: a live process of this engine
        foreign = call(ResourceIds("89abcdef", dead), "100.5")  # another engine's
        w.bridges["dialplan-conference"] = Bridge("dialplan-conference", ("mixing",))

        released = await release_leftovers(ari, mine, 5.0)

        assert sorted(released["bridges"]) == sorted([ai_call, same_pid])
        assert sorted(released["callers"]) == ["100.1", "100.3"]
        assert sorted(released["channels"]) == sorted(
            [earlier.make("em", c) for c in ("100.1", "100.2")] + [mine.make("em", "100.3")]
        )
        assert sorted(w.bridges) == sorted([human, running, foreign, "dialplan-conference"])
        assert sorted(w.bridges[human].channels) == sorted(["100.2", agent])
        assert sorted(w.channels) == sorted(["100.2", agent, "100.4", "100.5"])
        assert emu.violations == []
