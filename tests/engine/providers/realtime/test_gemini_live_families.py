"""Gemini Live per model family: each text path takes the route its family documents, the fake enforces the
3.1 rule (1007 on mid-call ``clientContent``), a 1007 close is an error the operator sees, and resumes are bounded."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from harness import ToolBox
from realtime_gemini_fake import GeminiLiveFake, GeminiRig
from websockets.asyncio.client import ClientConnection, connect

from engine.realtime.gemini_families import family_for
from engine.realtime.gemini_wire import GeminiOptions
from engine.realtime.session import ProviderNotice

M31 = "gemini-3.1-flash-live-preview"
M25 = "gemini-2.5-flash-native-audio-preview-12-2025"
LINE = "The dragon sleeps under the mill."
WHISPER = "Be curt with this one."


def rig(fake: GeminiLiveFake, model: str = M31, **kw: Any) -> GeminiRig:
    return GeminiRig(fake, ToolBox().tools(), ["get_weather", "get_time"], model=model, **kw)


def is_text(m: Any) -> bool:
    return isinstance(m, dict) and ("clientContent" in m or "text" in m.get("realtimeInput", {}))


def realtime_texts(fake: GeminiLiveFake) -> list[str]:
    return [m["realtimeInput"]["text"] for m in fake.of_kind("realtimeInput") if "text" in m["realtimeInput"]]


# ------------------------------------------------------------------------------------------------ the table


@pytest.mark.parametrize(
    ("model", "family", "mid_call_client_content", "history_config", "route"),
    [
        (M31, "gemini-3.1-live", False, True, "realtimeInput"),
        ("models/Gemini-3.1-Flash-Live-Preview", "gemini-3.1-live", False, True, "realtimeInput"),
        (M25, "gemini-2.5-native-audio", True, False, "clientContent"),
        ("gemini-live-2.5-flash-preview", "gemini-live-2.5", True, False, "clientContent"),
        ("gemini-2.0-flash-live-001", "gemini-2.0-flash-live", True, False, "clientContent"),
        ("gemini-live-test", "other", True, False, "clientContent"),
    ],
)
def test_each_model_maps_to_its_family(
    model: str, family: str, mid_call_client_content: bool, history_config: bool, route: str
) -> None:
    f = family_for(model)
    assert (f.id, f.mid_call_client_content, f.history_needs_config, f.text_route) == (
        family,
        mid_call_client_content,
        history_config,
        route,
    )


def test_the_family_option_picks_a_row_and_rejects_unknown_names() -> None:
    opts = GeminiOptions.parse("gem", {"family": "gemini-3.1-live"})
    assert family_for("gemini-9-live-next", opts.family).text_route == "realtimeInput"
    with pytest.raises(ValueError, match=r"providers\.gem\.options\.family: .*gemini-3\.1-live.*not 'gemini-4'"):
        GeminiOptions.parse("gem", {"family": "gemini-4"})


# ------------------------------------------------------------------------------------------------ the fake


TURN = {"clientContent": {"turns": [{"role": "user", "parts": [{"text": "hi"}]}], "turnComplete": True}}


async def _setup(ws: ClientConnection, model: str, **extra: Any) -> None:
    await ws.send(json.dumps({"setup": {"model": f"models/{model}", **extra}}))
    assert "setupComplete" in json.loads(await ws.recv())


async def _accepted(fake: GeminiLiveFake, ws: ClientConnection, text: str) -> bool:
    """Send ``text`` as realtime input; True once the fake has it and the socket is still open."""
    await ws.send(json.dumps({"realtimeInput": {"text": text}}))
    await fake.wait_for(lambda m: isinstance(m, dict) and text in str(m))
    return ws.close_code is None


async def test_the_fake_closes_1007_on_mid_call_client_content_for_a_31_model() -> None:
    async with GeminiLiveFake() as fake:
        async with connect(fake.url) as ws:
            await _setup(ws, M31)
            assert await _accepted(fake, ws, "hello")  # the documented route
            await ws.send(json.dumps(TURN))
            await asyncio.wait_for(ws.wait_closed(), 5)
    assert ws.close_code == 1007 and ws.close_reason == "Request contains an invalid argument."
    assert len(fake.errors) == 1 and "clientContent mid-call" in fake.errors[0]


async def test_the_fake_takes_31_initial_history_with_history_config_only_until_it_is_complete() -> None:
    history = {"historyConfig": {"initialHistoryInClientContent": True}}
    async with GeminiLiveFake() as fake:
        async with connect(fake.url) as ws:
            await _setup(ws, M31, **history)
            await ws.send(json.dumps(TURN))
            assert await _accepted(fake, ws, "and now live")
            assert fake.errors == []
            await ws.send(json.dumps(TURN))  # the history is complete: this one is mid-call
            await asyncio.wait_for(ws.wait_closed(), 5)
    assert ws.close_code == 1007


async def test_the_fake_takes_mid_call_client_content_from_25() -> None:
    async with GeminiLiveFake() as fake:
        async with connect(fake.url) as ws:
            await _setup(ws, M25)
            assert await _accepted(fake, ws, "first")
            await ws.send(json.dumps(TURN))
            assert await _accepted(fake, ws, "second")
    assert fake.errors == []


# ------------------------------------------------------------------------------------------------ 3.1 routes


async def test_31_greeting_goes_as_realtime_input_text() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake):
            first = await fake.wait_for(is_text)
    assert isinstance(first, dict) and first.get("realtimeInput", {}).get("text", "").endswith("Hello, test desk.")
    assert fake.errors == [] and fake.of_kind("clientContent") == [] and fake.connections == 1


async def test_31_announcement_whisper_and_say_now_go_as_realtime_input_text() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake, greeting=None) as r:
            assert await r.session.announce("Your table is booked.") is True
            via_whisper = await r.engine.whisper(r.call.call_id, WHISPER)
            via_say = await r.engine.say_now(r.call.call_id, LINE)
            await fake.wait_for(lambda m: isinstance(m, dict) and LINE in str(m))
    assert fake.errors == [] and fake.of_kind("clientContent") == [] and fake.connections == 1
    texts = realtime_texts(fake)
    assert len(texts) == 3
    assert "Your table is booked." in texts[0] and WHISPER in texts[1] and LINE in texts[2]
    assert via_whisper.startswith("realtimeInput") and via_say == "realtimeInput"


async def test_31_say_now_held_during_an_answer_goes_as_realtime_input_after_it() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake, greeting=None) as r:
            await fake.audio(b"\x01\x02" * 2400)
            await r.wait_until(lambda: r.session.events_in.responding)
            via = await r.engine.say_now(r.call.call_id, LINE)
            await fake.turn_complete()
            await fake.wait_for(lambda m: isinstance(m, dict) and LINE in str(m))
    assert fake.errors == [] and fake.of_kind("clientContent") == []
    assert via == "realtimeInput (after the answer in progress)" and LINE in realtime_texts(fake)[0]


async def test_31_apply_now_continue_goes_as_realtime_input_text() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake, greeting=None) as r:
            await fake.resumption("handle-1")
            await fake.audio(b"\x00\x00" * 480)  # the model is mid-answer
            await r.wait_until(lambda: r.session.handle == "handle-1")
            r.engine.set_tool_enabled(r.call.call_id, "get_time", False, apply="now")
            await r.wait_event(lambda e: isinstance(e, ProviderNotice) and e.code == "resumed")
            await fake.wait_for(is_text)
    assert fake.errors == [] and fake.of_kind("clientContent") == [] and fake.connections == 2
    assert "tools available to you changed" in realtime_texts(fake)[0]


async def test_31_fresh_reconnect_seeds_the_transcript_as_initial_history() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake, greeting=None) as r:
            await fake.drop()  # nothing said yet: no history to seed
            await r.wait_event(lambda e: isinstance(e, ProviderNotice) and e.code == "fresh")
            await r.engine.calls.realtime_caller_said(r.call.call_id, "I want a table")
            await r.engine.calls.realtime_agent_said(r.call.call_id, "For how many?")
            await fake.drop()
            await r.wait_until(lambda: len(fake.setups) == 3)
            seed = await fake.wait_for(lambda m: isinstance(m, dict) and "clientContent" in m)
            await r.session.send_audio(b"\x00\x00" * 640)
            await r.engine.say_now(r.call.call_id, LINE)
            await fake.wait_for(lambda m: isinstance(m, dict) and LINE in str(m))
    assert fake.errors == [] and fake.connections == 3
    assert "historyConfig" not in fake.setups[1]
    assert fake.setups[2]["historyConfig"] == {"initialHistoryInClientContent": True}
    assert isinstance(seed, dict) and seed["clientContent"]["turnComplete"] is True
    turns = seed["clientContent"]["turns"]
    assert [t["role"] for t in turns] == ["user", "model"] and turns[-1]["parts"][0]["text"] == "For how many?"
    assert len(fake.of_kind("clientContent")) == 1 and LINE in realtime_texts(fake)[-1]


async def test_25_keeps_client_content_turns() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake, model=M25) as r:
            await fake.wait_for(is_text)
            via = await r.engine.whisper(r.call.call_id, WHISPER)
            await fake.wait_for(lambda m: isinstance(m, dict) and WHISPER in str(m))
    assert fake.errors == [] and realtime_texts(fake) == [] and via == "clientContent"
    greeting, whisper = (m["clientContent"] for m in fake.of_kind("clientContent"))
    assert greeting["turnComplete"] is True and whisper["turnComplete"] is False


# ------------------------------------------------------------------------------------------------ 1007, resumes


@pytest.mark.parametrize(("model", "rule"), [(M31, "realtimeInput.text"), (M25, "clientContent turns")])
async def test_1007_is_an_error_the_operator_sees_not_a_resume(model: str, rule: str) -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake, model=model, greeting=None) as r:
            await fake.resumption("handle-x")
            await r.wait_until(lambda: r.session.handle == "handle-x")
            await fake.drop(1007, "Request contains an invalid argument.")
            notice = await r.wait_event(lambda e: isinstance(e, ProviderNotice))
            await r.wait_until(lambda: r._collector is not None and r._collector.done())  # events() ended
    assert notice.fatal and notice.code == "invalid_payload"
    assert "1007" in notice.message and "Request contains an invalid argument." in notice.message
    assert rule in notice.message and "not resumed" in notice.message
    assert fake.connections == 1


async def test_resumes_are_bounded_and_the_last_notice_says_why_they_stopped() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake, greeting=None) as r:  # at most 3 resumes a minute by default
            for i in range(3):
                await fake.resumption(f"handle-{i}")
                await r.wait_until(lambda i=i: r.session.handle == f"handle-{i}")
                await fake.drop(1011, "Internal error encountered.")
                await r.wait_until(lambda i=i: len(fake.setups) == i + 2)
                await r.wait_until(
                    lambda i=i: [e.code for e in r.events if isinstance(e, ProviderNotice)] == ["resumed"] * (i + 1)
                )
            await fake.resumption("handle-last")
            await r.wait_until(lambda: r.session.handle == "handle-last")
            await fake.drop(1011, "Internal error encountered.")
            final = await r.wait_event(lambda e: isinstance(e, ProviderNotice) and e.fatal)
            await r.wait_until(lambda: r._collector is not None and r._collector.done())
    notices = [e for e in r.events if isinstance(e, ProviderNotice)]
    assert [n.code for n in notices] == ["resumed", "resumed", "resumed", "resumes_exhausted"]
    assert "3 times within a minute" in final.message and "max_resumes_per_minute" in final.message
    assert "1011" in final.message
    assert fake.connections == 4 and fake.errors == []
