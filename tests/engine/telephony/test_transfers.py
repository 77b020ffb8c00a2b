"""Transfers on real (emulated) phone calls: warm hand-off, busy target, cancel while ringing, unknown target."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

from emulator import AriEmulator

from engine.events import CallEnded, CallTransferStarted, Event, Subscription
from tests.engine.telephony.phone import desk_engine, speech, until_quiet


def bridge_of(emu: AriEmulator, channel: str) -> list[str]:
    ch = emu.world.channels[channel]
    return sorted(emu.world.bridges[ch.bridge].channels) if ch.bridge else []


async def test_warm_transfer_leaves_exactly_caller_and_agent(tmp_path: Path) -> None:
    say = speech("transfer me to support")
    async with AriEmulator() as emu:
        emu.ring_s = 6.0  # rings past the "please hold", so the caller hears music before the hand-off
        async with desk_engine(emu, tmp_path, 42000) as engine:
            sub = engine.bus.subscribe(maxsize=10_000)
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            await until_quiet(emu, caller.id)
            phone = emu.media_for(caller.id)
            await phone.speak(say)
            await phone.silence(1.0)
            answered = await emu.wait_event("StasisStart", within_s=20, name_prefix="PJSIP/6000")
            agent = answered["channel"]["id"]
            assert answered["args"] == ["transfer", caller.id]
            await emu.wait_event("ChannelEnteredBridge", agent)
            assert bridge_of(emu, caller.id) == sorted([caller.id, agent])  # exactly caller + agent
            assert not emu.world.channels[caller.id].moh
            seen: list[Event] = []
            done = await _next(sub, "call.transfer_answered", seen=seen)
            assert done.handoff_ms > 0
            started = next(e for e in seen if isinstance(e, CallTransferStarted))
            assert (started.target, started.destination, started.mode) == ("support", "PJSIP/6000", "warm")
            assert next(e for e in seen if isinstance(e, CallEnded)).reason == "transferred"
            moh = [p for m, p, _ in emu.world.requests if p == f"/channels/{caller.id}/moh"]
            assert moh == [f"/channels/{caller.id}/moh"] * 2  # music on while ringing, off for the hand-off
            await asyncio.sleep(0.5)
            assert bridge_of(emu, caller.id) == sorted([caller.id, agent])  # still talking after the hand-off
            await emu.caller_hangs_up(agent)  # the agent ends the call: the caller is hung up too
            await emu.wait_event("ChannelDestroyed", caller.id)
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert not any(n.startswith("Local/") for n in emu.world.created_names)
        assert any(n.startswith("PJSIP/6000") for n in emu.world.created_names)  # dialled directly
        assert emu.violations == []


async def test_busy_target_and_cancel_while_ringing(tmp_path: Path) -> None:
    to_sales, to_support, cancel = (
        speech("transfer me to sales"),
        speech("transfer me to support"),
        speech("cancel the transfer"),
    )
    bye = speech("goodbye")
    async with AriEmulator() as emu:
        emu.endpoints = {"PJSIP/6001": "busy", "PJSIP/6000": "no_answer"}
        async with desk_engine(emu, tmp_path, 42200) as engine:
            sub = engine.bus.subscribe(maxsize=10_000)
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            phone = emu.media_for(caller.id)
            failed = await _say_until(emu, caller.id, sub, to_sales, "call.transfer_failed")
            assert (failed.target, failed.reason) == ("sales", "busy")
            told = await _next(sub, "transcript.added", lambda e: "is busy" in e.text)
            assert told.role == "assistant"
            started = await _say_until(
                emu, caller.id, sub, to_support, "call.transfer_started", lambda e: e.target == "support"
            )
            assert engine.calls_info()[0].transfer == "ringing support"
            await _say_until(emu, caller.id, sub, cancel, "call.transfer_cancelled")
            ringing = [c for c in emu.world.created_names if c.startswith("PJSIP/6000")]
            assert ringing and not any(c.name.startswith("PJSIP/6000") for c in emu.world.channels.values())
            assert not emu.world.channels[caller.id].moh
            assert started.mode == "warm"
            await until_quiet(emu, caller.id)
            await phone.speak(bye)
            await phone.silence(1.5)
            await emu.wait_event("ChannelDestroyed", caller.id, within_s=20)
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []


async def _say_until(
    emu: AriEmulator,
    caller: str,
    sub: Subscription,
    utterance: bytes,
    kind: str,
    pred: Callable[[Any], bool] = lambda e: True,
    seen: list[Event] | None = None,
) -> Any:
    """The caller says ``utterance`` and the next ``kind`` event is returned; a caller the engine did not act on
    says it again once (offline recognition on a loaded machine may mishear it). A failure says what the engine
    heard and did meanwhile."""
    seen = [] if seen is None else seen
    phone = emu.media_for(caller)
    for attempt in range(2):
        await until_quiet(emu, caller)
        await phone.speak(utterance)
        await phone.silence(1.0)
        try:
            return await _next(sub, kind, pred, within_s=20, seen=seen)
        except TimeoutError:
            if attempt:
                raise AssertionError(f"no {kind} after saying it twice; meanwhile: {_story(seen)}") from None
    raise AssertionError("unreachable")


def _story(events: list[Event]) -> list[str]:
    """The transcript lines and transfer events among ``events``, in order."""
    return [
        f"{e.type}: {getattr(e, 'text', '') or getattr(e, 'reason', '') or getattr(e, 'target', '')}"
        for e in events
        if e.type == "transcript.added" or e.type.startswith("call.transfer")
    ]


async def _next(
    sub: Subscription,
    kind: str,
    pred: Callable[[Any], bool] = lambda e: True,
    within_s: float = 10.0,
    seen: list[Event] | None = None,
) -> Any:
    """The next event of ``kind`` matching ``pred`` (every event read on the way goes to ``seen``)."""
    async with asyncio.timeout(within_s):
        async for e in sub:
            if seen is not None:
                seen.append(e)
            if e.type == kind and pred(e):
                return e
    raise AssertionError(f"no {kind}")


async def test_blind_transfer_hands_over_at_once_and_the_ai_returns_when_it_fails(tmp_path: Path) -> None:
    to_sales, to_support = speech("put me through to sales"), speech("put me through to support")
    async with AriEmulator() as emu:
        emu.endpoints = {"PJSIP/6001": "busy"}
        emu.ring_s = 1.0
        async with desk_engine(emu, tmp_path, 42400) as engine:
            sub = engine.bus.subscribe(maxsize=10_000)
            caller = await emu.incoming_call("ava", "Robin", "1001")
            await emu.wait_event("ChannelEnteredBridge", caller.id)
            phone = emu.media_for(caller.id)
            seen: list[Event] = []
            failed = await _say_until(emu, caller.id, sub, to_sales, "call.transfer_failed", seen=seen)
            assert (failed.target, failed.reason) == ("sales", "busy")
            # the AI left at once (its call ended) and came back into the same phone call to say so
            await _next(sub, "transcript.added", lambda e: "sales is busy" in e.text, within_s=20, seen=seen)
            assert any(isinstance(e, CallEnded) and e.reason == "transferred" for e in seen)
            assert any(c.startswith("ava-em-") for c in bridge_of(emu, caller.id))  # the AI's media is back
            await until_quiet(emu, caller.id)
            await phone.speak(to_support)
            await phone.silence(1.0)
            answered = await emu.wait_event("StasisStart", within_s=20, name_prefix="PJSIP/6000")
            agent = answered["channel"]["id"]
            await emu.wait_event("ChannelEnteredBridge", agent)
            assert bridge_of(emu, caller.id) == sorted([caller.id, agent])
            await emu.caller_hangs_up(caller.id)  # the caller ends it: the agent is hung up too
            await emu.wait_event("ChannelDestroyed", agent)
        assert emu.world.leftovers() == {"channels": [], "bridges": []}
        assert emu.violations == []
