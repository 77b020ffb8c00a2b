"""Live steering on every realtime provider, through the real engine's ``say_now`` / ``whisper`` and the loopback
fakes (each client message validated against the provider's SDK types): the message each protocol offers for it,
really sent, and what the agent then says."""

from __future__ import annotations

from typing import Any

import pytest
from harness import ToolBox
from realtime_deepgram_fake import DeepgramFake
from realtime_deepgram_harness import live_call
from realtime_elevenlabs_world import world
from realtime_gemini_fake import GeminiLiveFake, GeminiRig
from realtime_markers import flushed
from realtime_openai_fake import OpenAIRealtimeFake, Say
from realtime_openai_harness import realtime_call

from engine.events import SteeringInjected
from engine.providers.base import ProviderError
from engine.realtime.session import AssistantAudio, AssistantText, ResponseDone

LINE = "The innkeeper slams a tankard on the bar."
WHISPER = "You are secretly afraid of the caller; stammer a little."


def said(text: str) -> Any:
    return lambda e: isinstance(e, AssistantText) and e.final and e.text == text


def steered(engine: Any) -> Any:
    return engine.bus.subscribe(types={SteeringInjected.type})


# ------------------------------------------------------------------------------------------------ OpenAI Realtime


async def test_openai_say_now_is_a_response_with_the_line_after_the_one_in_flight() -> None:
    fake = OpenAIRealtimeFake([Say("A long answer.", audio_ms=1000, hold=True)])
    async with fake, realtime_call(fake) as call:
        sub = steered(call.engine)
        await call.events.until(lambda e: isinstance(e, ResponseDone))
        await fake.caller_turn("Tell me a story")
        await call.events.until(lambda e: isinstance(e, AssistantAudio), count=5)  # the answer is being said
        assert await call.engine.say_now(call.session.call_id, LINE) == "response.create"
        await flushed(fake, call.live, "openai")
        assert len(fake.of_type("response.create")) == 1  # never over the model: still only the greeting's
        fake.release()
        await call.events.until(said(LINE))
        events = sub.drain()
    assert fake.errors == []
    create = fake.of_type("response.create")[-1]
    assert LINE in create["response"]["instructions"] and create["response"]["tool_choice"] == "none"
    (ev,) = events
    assert isinstance(ev, SteeringInjected) and (ev.kind, ev.via, ev.hidden) == ("say", "response.create", False)


async def test_openai_whisper_is_a_system_item_for_the_next_answer_then_deleted() -> None:
    fake = OpenAIRealtimeFake([Say("Y-yes, what do you want?"), Say("Fine.")])
    async with fake, realtime_call(fake) as call:
        await call.events.until(lambda e: isinstance(e, ResponseDone))
        assert await call.engine.whisper(call.session.call_id, WHISPER) == "conversation.item.create"
        create = await fake.wait_for(
            lambda m: isinstance(m, dict) and m.get("type") == "conversation.item.create" and WHISPER in str(m)
        )
        assert isinstance(create, dict) and create["item"]["role"] == "system"
        item = create["item"]
        assert item["type"] == "message" and WHISPER in item["content"][0]["text"]
        assert item["content"][0]["type"] == "input_text"
        assert fake.of_type("conversation.item.delete") == []  # not before the answer it steers
        await fake.caller_turn("Hello?")
        await call.events.until(said("Y-yes, what do you want?"))
        await fake.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "conversation.item.delete")
        await fake.caller_turn("Bread, please.")
        await call.events.until(said("Fine."))
    assert fake.errors == []
    (delete,) = fake.of_type("conversation.item.delete")
    assert delete["item_id"] == item["id"] and item["id"] not in fake.items
    assert len(fake.of_type("response.create")) == 1  # a whisper makes nobody speak: only the greeting was asked


async def test_openai_whisper_during_an_answer_waits_for_the_next_one() -> None:
    fake = OpenAIRealtimeFake([Say("First answer.", audio_ms=1000, hold=True), Say("Second answer.")])
    async with fake, realtime_call(fake) as call:
        await call.events.until(lambda e: isinstance(e, ResponseDone))
        await fake.caller_turn("One")
        await call.events.until(lambda e: isinstance(e, AssistantAudio), count=5)
        await call.engine.whisper(call.session.call_id, WHISPER)
        fake.release()
        await call.events.until(said("First answer."))
        await call.events.until(lambda e: isinstance(e, ResponseDone), count=2)
        assert fake.of_type("conversation.item.delete") == []  # the answer in flight was made before it
        await fake.caller_turn("Two")
        await call.events.until(said("Second answer."))
        await fake.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "conversation.item.delete")
    assert fake.errors == []


# ------------------------------------------------------------------------------------------------ Deepgram


async def test_deepgram_say_now_is_a_queued_inject_agent_message() -> None:
    async with live_call() as live:
        fake = live.fake
        await fake.start_speaking("Welcome to the inn.")
        assert await live.engine.say_now(live.call.call_id, LINE) == "InjectAgentMessage"
        msg = await fake.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "InjectAgentMessage")
        await fake.done_speaking()  # the agent finishes its turn; the queued line is said after it
        await live.wait_event(said(LINE))
    assert fake.errors == []
    assert msg == {"type": "InjectAgentMessage", "message": LINE, "behavior": "queue"}


async def test_deepgram_whisper_is_update_prompt_taken_back_after_the_next_answer() -> None:
    async with live_call() as live:
        fake = live.fake
        prompt = fake.settings[0]["agent"]["think"]["prompt"]
        assert await live.engine.whisper(live.call.call_id, WHISPER) == "UpdatePrompt"
        update = await fake.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "UpdatePrompt")
        assert isinstance(update, dict) and WHISPER in update["prompt"]
        await fake.agent_says("Something unrelated.", b"\xff" * 160)  # not the caller's turn: still whispered
        await live.wait_event(said("Something unrelated."))  # the session has read it
        await live.flushed()
        assert not [m for m in fake.json_messages() if m.get("type") == "UpdateThink"]
        await fake.user_says("Who are you?")
        await fake.agent_says("I-I am the innkeeper.", b"\xff" * 160)
        think = await fake.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "UpdateThink")
    assert fake.errors == []
    assert isinstance(think, dict) and think["think"]["prompt"] == prompt  # the whole prompt again, without it


# ------------------------------------------------------------------------------------------------ Gemini Live


def gemini_rig(fake: GeminiLiveFake) -> GeminiRig:
    return GeminiRig(fake, ToolBox().tools(), ["get_weather"])


async def test_gemini_say_now_and_whisper_are_client_content() -> None:
    async with GeminiLiveFake() as fake:
        async with gemini_rig(fake) as r:
            await fake.wait_for(lambda m: isinstance(m, dict) and "clientContent" in m)
            await fake.said("Hello, test desk.")
            await fake.turn_complete()
            await r.wait_until(lambda: not r.session.events_in.responding)
            assert await r.engine.whisper(r.call.call_id, WHISPER) == "clientContent"
            assert await r.engine.say_now(r.call.call_id, LINE) == "clientContent"
            say = await fake.wait_for(lambda m: isinstance(m, dict) and "clientContent" in m and LINE in str(m))
    assert fake.errors == []
    contents = [m["clientContent"] for m in fake.json_messages() if "clientContent" in m]
    whisper = next(c for c in contents if WHISPER in str(c))
    assert whisper["turnComplete"] is False and whisper["turns"][0]["role"] == "user"
    assert isinstance(say, dict) and say["clientContent"]["turnComplete"] is True


async def test_gemini_say_now_waits_for_the_models_turn_to_end() -> None:
    async with GeminiLiveFake() as fake:
        async with gemini_rig(fake) as r:
            await fake.wait_for(lambda m: isinstance(m, dict) and "clientContent" in m)
            await fake.audio(b"\x01\x02" * 2400)  # the model is talking (the greeting)
            await r.wait_until(lambda: r.session.events_in.responding)
            via = await r.engine.say_now(r.call.call_id, LINE)
            await flushed(fake, r.session, "gemini")
            assert not [m for m in fake.json_messages() if "clientContent" in m and LINE in str(m)]
            await fake.turn_complete()
            await fake.wait_for(lambda m: isinstance(m, dict) and "clientContent" in m and LINE in str(m))
    assert fake.errors == []
    assert via == "clientContent (after the answer in progress)"


# ------------------------------------------------------------------------------------------------ ElevenLabs


async def test_elevenlabs_whisper_is_a_contextual_update_and_say_now_a_user_message() -> None:
    async with world() as w:
        session, _ = await w.start()
        await w.ws.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "conversation_initiation_client_data")
        assert await w.engine.whisper(session.call_id, WHISPER) == "contextual_update"
        assert await w.engine.say_now(session.call_id, LINE) == "user_message"
        await w.ws.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "user_message")
        await w.until(said(LINE))
    assert w.ws.errors == []
    assert any(WHISPER in t for t in w.ws.contextual)
    (message,) = w.ws.user_messages
    assert message.endswith(LINE) and "operator" in message


async def test_a_realtime_provider_that_is_not_connected_refuses_with_its_reason() -> None:
    fake = DeepgramFake()
    async with live_call(fake=fake) as live:
        await live.session.aclose()
        with pytest.raises(ProviderError, match="not connected"):
            await live.engine.say_now(live.call.call_id, LINE)
    assert live.call.steering == []
