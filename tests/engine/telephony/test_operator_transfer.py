"""The operator transfers a live phone call (Engine.transfer_call): blind and warm through the call's own transfer
control, and every refusal (unknown call, not a phone call, unknown destination, bad mode) says what was wrong."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from emulator import AriEmulator

from engine.events import CallTransferStarted, SteeringInjected
from engine.sessions.session import CallError
from tests.engine.telephony.phone import desk_engine, until_quiet


def bridge_of(emu: AriEmulator, channel: str) -> list[str]:
    ch = emu.world.channels[channel]
    return sorted(emu.world.bridges[ch.bridge].channels) if ch.bridge else []


def phone_call_id(engine: object, channel: str) -> str:
    calls = [c for c in engine.calls_info() if c.channel_id == channel]  # type: ignore[attr-defined]
    assert len(calls) == 1, calls
    return str(calls[0].call_id)


async def test_blind_transfer_by_the_operator_leaves_exactly_caller_and_agent(tmp_path: Path) -> None:
    async with AriEmulator() as emu:
        emu.ring_s = 0.3
        async with desk_engine(emu, tmp_path, 46000) as engine:
            sub = engine.bus.subscribe(maxsize=10_000)
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            await until_quiet(emu, caller.id)
            call_id = phone_call_id(engine, caller.id)
            done = await engine.transfer_call(call_id, "Agent")  # an alias, any case
            assert done == {
                "ok": True,
                "message": "Transferring you to support now.",
                "target": "support",
                "mode": "blind",
            }
            answered = await emu.wait_event("StasisStart", within_s=20, name_prefix="PJSIP/6000")
            agent = answered["channel"]["id"]
            await emu.wait_event("ChannelEnteredBridge", agent)
            assert bridge_of(emu, caller.id) == sorted([caller.id, agent])
            started = next(e for e in sub.drain() if isinstance(e, CallTransferStarted))
            assert (started.target, started.mode) == ("support", "blind")
            await emu.caller_hangs_up(caller.id)
            await emu.wait_event("ChannelDestroyed", agent)
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert not any(n.startswith("Local/") for n in emu.world.created_names)
        assert emu.violations == []


async def test_warm_transfer_by_the_operator_has_the_ai_tell_the_caller_to_hold(tmp_path: Path) -> None:
    async with AriEmulator() as emu:
        emu.ring_s = 2.0
        async with desk_engine(emu, tmp_path, 46100) as engine:
            sub = engine.bus.subscribe(maxsize=10_000)
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            await until_quiet(emu, caller.id)
            call_id = phone_call_id(engine, caller.id)
            done = await engine.transfer_call(call_id, "support", mode="warm")
            assert (done["target"], done["mode"]) == ("support", "warm")
            said = [e for e in sub.drain() if isinstance(e, SteeringInjected)]
            assert [(e.kind, e.text) for e in said] == [
                ("say", "Transferring you to support; please hold while it rings.")
            ]
            answered = await emu.wait_event("StasisStart", within_s=20, name_prefix="PJSIP/6000")
            agent = answered["channel"]["id"]
            await emu.wait_event("ChannelEnteredBridge", agent)
            assert bridge_of(emu, caller.id) == sorted([caller.id, agent])
            await emu.caller_hangs_up(agent)
            await emu.wait_event("ChannelDestroyed", caller.id)
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []


async def test_refusals_name_what_was_wrong(tmp_path: Path) -> None:
    async with AriEmulator() as emu:
        async with desk_engine(emu, tmp_path, 46200) as engine:
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            await until_quiet(emu, caller.id)
            call_id = phone_call_id(engine, caller.id)
            with pytest.raises(CallError, match=r"no transfer destination 'accounts'.*valid: support, sales"):
                await engine.transfer_call(call_id, "accounts")
            with pytest.raises(ValueError, match="'blind' or 'warm', not 'cold'"):
                await engine.transfer_call(call_id, "support", mode="cold")  # type: ignore[arg-type]
            with pytest.raises(CallError, match="has no phone line"):
                await engine.transfer_call("nope", "support")
            text = await engine.start_call("desk")  # a console test call: no phone line to transfer
            with pytest.raises(CallError, match=f"call '{text.call_id}' has no phone line"):
                await engine.transfer_call(text.call_id, "support")
            await engine.end_call(text.call_id)
            await asyncio.sleep(0)
            assert not any(n.startswith("PJSIP/600") for n in emu.world.created_names)  # nothing was dialled
            await emu.caller_hangs_up(caller.id)
        assert emu.violations == []
