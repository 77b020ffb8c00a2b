"""OpenAI Realtime through the real engine against the loopback fake (every client event SDK-validated)."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Callable

from harness import API_KEY
from realtime_markers import flushed
from realtime_openai_fake import Calls, OpenAIRealtimeFake, Say
from realtime_openai_harness import realtime_call

from engine.realtime.session import (
    PCM16_16K,
    PCM16_24K,
    PCMU_8K,
    AssistantAudio,
    AssistantText,
    CallerSpeechStarted,
    CallerText,
    ResponseDone,
    UsageReport,
)
from engine.sessions.history import ToolCallItem


def done(status: str = "completed") -> Callable[[object], bool]:
    return lambda e: isinstance(e, ResponseDone) and e.status == status


async def test_greeting_session_setup_and_audio_formats() -> None:
    async with OpenAIRealtimeFake() as fake, realtime_call(fake) as call:
        text = await call.events.until(lambda e: isinstance(e, AssistantText) and e.final)
        await call.events.until(done())
        await call.live.send_audio(b"\xff" * 160)
        await fake.wait_for(lambda m: isinstance(m, dict) and m["type"] == "input_audio_buffer.append")
        usage = await call.events.until(lambda e: isinstance(e, UsageReport))
    assert fake.errors == []
    assert isinstance(text, AssistantText) and text.text == "Hello, test desk."
    assert call.live.input_spec == call.live.output_spec == PCMU_8K
    headers = fake.request_headers[0]
    assert headers["Authorization"] == f"Bearer {API_KEY}" and "OpenAI-Beta" not in headers
    assert fake.request_paths[0] == "/v1/realtime?model=gpt-realtime"
    setup = fake.received[0]
    assert isinstance(setup, dict) and setup["type"] == "session.update"
    session = setup["session"]
    assert session["type"] == "realtime" and session["instructions"] == "You are a test agent."
    assert session["audio"]["input"]["format"] == {"type": "audio/pcmu"}
    assert session["audio"]["output"] == {"format": {"type": "audio/pcmu"}, "voice": "marin"}
    assert session["audio"]["input"]["turn_detection"]["type"] == "server_vad"
    assert session["audio"]["input"]["transcription"] == {"model": "gpt-4o-mini-transcribe"}
    assert sorted(t["name"] for t in session["tools"]) == sorted(call.session.shown_tools)
    assert all(set(t) == {"type", "name", "description", "parameters"} for t in session["tools"])
    greet = fake.of_type("response.create")[0]
    assert "Hello, test desk." in greet["response"]["instructions"]
    assert fake.received.index(greet) > 0  # after the session was set up
    audio = call.events.of(AssistantAudio)
    assert audio and all(a.item_id == audio[0].item_id for a in audio)
    assert isinstance(usage, UsageReport) and usage.input_tokens == 40 and usage.output_tokens == 25
    assert usage.output_audio_s > 0


async def test_pcm_driver_gets_24k_pcm_and_vad_options_tune_it() -> None:
    async with (
        OpenAIRealtimeFake() as fake,
        realtime_call(fake, audio=PCM16_16K, greeting=None, turn_detection={"silence_duration_ms": 700}) as call,
    ):
        await call.live.send_audio(b"\x00\x00" * 320)
        await fake.wait_for(lambda m: isinstance(m, dict) and m["type"] == "input_audio_buffer.append")
    assert fake.errors == []
    assert call.live.input_spec == call.live.output_spec == PCM16_24K
    session = fake.of_type("session.update")[0]["session"]
    assert session["audio"]["input"]["format"] == {"type": "audio/pcm", "rate": 24000}
    assert session["audio"]["input"]["turn_detection"]["silence_duration_ms"] == 700
    assert session["audio"]["input"]["turn_detection"]["threshold"] == 0.5
    assert fake.of_type("response.create") == []  # no greeting configured: the model waits for the caller


async def test_tool_call_runs_after_response_done_and_one_response_create_follows() -> None:
    fake = OpenAIRealtimeFake([Calls([("get_weather", {"city": "Paris"}, "call_Wx42")]), Say("18 degrees in Paris.")])
    async with fake, realtime_call(fake) as call:
        await call.events.until(done())  # greeting
        await fake.caller_turn("Weather in Paris?")
        caller = await call.events.until(lambda e: isinstance(e, CallerText) and e.final)
        said = await call.events.until(lambda e: isinstance(e, AssistantText) and e.text == "18 degrees in Paris.")
    assert fake.errors == []
    assert isinstance(caller, CallerText) and caller.text == "Weather in Paris?"
    assert said is not None
    assert call.box.calls == [("get_weather", {"city": "Paris"})]
    (output,) = fake.outputs
    assert output["call_id"] == "call_Wx42"  # echoed exactly as the provider sent it
    assert json.loads(output["output"])["status"] == "success"
    kinds = [m["type"] for m in fake.json_messages() if m["type"] != "input_audio_buffer.append"]
    i = kinds.index("conversation.item.create")
    assert kinds[i + 1] == "response.create" and kinds.count("response.create") == 2  # the greeting, the answer
    recorded = next(h for h in call.session.history.items() if isinstance(h, ToolCallItem))
    assert dict(recorded.provider_ids)["provider"] == "call_Wx42"


async def test_parallel_calls_run_concurrently_then_one_response_create() -> None:
    fake = OpenAIRealtimeFake(
        [
            Calls([("get_weather", {"city": "Oslo"}, "call_a"), ("get_time", {"zone": "Europe/Oslo"}, "call_b")]),
            Say("Cold and noon."),
        ]
    )
    async with fake, realtime_call(fake) as call:
        call.box.barrier = asyncio.Barrier(2)  # each tool waits for the other: run one by one, they time out
        await call.events.until(done())
        await fake.caller_turn("Weather and time in Oslo?")
        await call.events.until(lambda e: isinstance(e, AssistantText) and e.text == "Cold and noon.")
    assert fake.errors == []
    assert sorted(c[0] for c in call.box.calls) == ["get_time", "get_weather"]
    assert [o["call_id"] for o in fake.outputs] == ["call_a", "call_b"]
    creates_after = [m for m in fake.json_messages() if m["type"] == "response.create"][1:]
    assert len(creates_after) == 1  # one for both results
    assert [json.loads(o["output"])["status"] for o in fake.outputs] == ["success", "success"]


async def test_cancelled_response_calls_never_run_and_get_no_output() -> None:
    fake = OpenAIRealtimeFake([Calls([("get_weather", {"city": "Rome"}, "call_cx")], cancel=True)])
    async with fake, realtime_call(fake) as call:
        await call.events.until(done())
        await fake.caller_turn("Weather in Rome?")
        await call.events.until(done("cancelled"))
        await call.events.until(lambda e: isinstance(e, CallerSpeechStarted), count=2)
        await flushed(fake, call.live, "openai")  # a wrong late answer would have come before it
    assert fake.errors == []
    assert call.box.calls == []
    assert fake.outputs == []
    assert len(fake.of_type("response.create")) == 1  # only the greeting


async def test_tool_not_shown_is_answered_with_an_error_result() -> None:
    fake = OpenAIRealtimeFake([Calls([("delete_everything", {}, "call_bad")]), Say("Sorry, I cannot.")])
    async with fake, realtime_call(fake) as call:
        await call.events.until(done())
        await fake.caller_turn("Delete it all")
        await call.events.until(lambda e: isinstance(e, AssistantText) and e.text == "Sorry, I cannot.")
    assert fake.errors == []
    (output,) = fake.outputs
    assert output["call_id"] == "call_bad"
    assert json.loads(output["output"])["status"] == "rejected"


async def test_barge_in_truncates_to_the_audio_played() -> None:
    fake = OpenAIRealtimeFake([Say("A long answer about the weather.", audio_ms=3000, hold=True)], chunk_delay_s=0.01)
    async with fake, realtime_call(fake) as call:
        await call.events.until(done())
        first = call.events.of(AssistantAudio)[0].item_id
        await fake.caller_turn("Tell me about the weather")
        answer = await call.events.until(lambda e: isinstance(e, AssistantAudio) and e.item_id != first, count=4)
        assert isinstance(answer, AssistantAudio)  # 400 ms of it has arrived
        await fake.barge_in()
        await call.events.until(done("cancelled"))
        await call.live.played(answer.item_id, 240.4)
        await call.live.played(answer.item_id, 500)  # once per item
        truncate = await fake.wait_for(lambda m: isinstance(m, dict) and m["type"] == "conversation.item.truncate")
        await call.live.played("item_never_sent", 100)
        await call.live.played(first, 400)  # the greeting was heard to its end: nothing to cut
        await flushed(fake, call.live, "openai")
    assert fake.errors == []
    assert truncate == {
        "type": "conversation.item.truncate",
        "item_id": answer.item_id,
        "content_index": 0,
        "audio_end_ms": 240,
    }
    assert len(fake.of_type("conversation.item.truncate")) == 1


async def test_malformed_and_unknown_events_are_logged_and_ignored(caplog) -> None:
    async with OpenAIRealtimeFake() as fake, realtime_call(fake, greeting=None) as call:
        await fake.send_raw("not json")
        await fake.send({"type": "response.brand_new_thing"})
        await fake.send({"type": "response.output_audio.delta", "item_id": "i", "delta": "!!not base64!!"})
        await fake.send({"type": "response.done"})
        await fake.send_raw(b"\x00\x01")
        await fake.send(
            {"type": "response.output_audio.delta", "item_id": "i2", "delta": base64.b64encode(b"ok").decode()}
        )
        got = await call.events.until(lambda e: isinstance(e, AssistantAudio))
    assert isinstance(got, AssistantAudio) and got.data == b"ok"
    logged = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert sum(m.startswith("rt: ignored") for m in logged) == 5, logged


async def test_every_handled_event_type_survives_malformed_fields() -> None:
    from engine.realtime.openai_realtime_session import OpenAIRealtimeSession

    shapes: list[dict[str, object]] = [
        {},
        {"response": []},
        {"response": {"id": None, "status": 5, "output": "x", "usage": []}},
        {"item": "x", "response_id": 3},
        {"item": {"type": "function_call", "call_id": 7}},
        {"delta": 5, "item_id": ["x"]},
        {"transcript": None, "text": {}},
        {"error": "boom"},
        {"call_id": "", "name": None},
    ]
    async with OpenAIRealtimeFake() as fake, realtime_call(fake, greeting=None) as call:
        for kind in sorted(OpenAIRealtimeSession.handlers):
            if kind in ("session.updated",):
                continue
            for shape in shapes:
                await fake.send({"type": kind, **shape})
        await fake.caller_turn("Still there?")
        await call.events.until(lambda e: isinstance(e, AssistantText) and e.final and e.text == "Okay.")
    assert fake.errors == []
    assert not [e for e in call.events.events if getattr(e, "fatal", False)]
