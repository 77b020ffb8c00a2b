"""OpenAI Realtime by the service's documented behaviour: rate limits, errors, transcription failures, unknown
events, and a drop in the middle of a response that said something (real-behaviour.md, "OpenAI Realtime")."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest
from realtime_openai_fake import OpenAIRealtimeFake
from realtime_openai_harness import realtime_call

from engine.events import ProviderRateLimits, RateLimit
from engine.realtime.session import AssistantText, ProviderNotice, ResponseDone


def said(text: str) -> Callable[[object], bool]:
    return lambda e: isinstance(e, AssistantText) and e.final and e.text == text


def notice(code: str) -> Callable[[object], bool]:
    return lambda e: isinstance(e, ProviderNotice) and e.code == code


def creates(fake: OpenAIRealtimeFake, start: int = 0) -> list[dict]:
    return [m for m in fake.json_messages()[start:] if m["type"] == "response.create"]


def metric(text: str, series: str, **labels: str) -> float | None:
    want = ",".join(f'{k}="{v}"' for k, v in sorted(labels.items()))
    for line in text.splitlines():
        if line.startswith(f"{series}{{{want}}} "):
            return float(line.rsplit(" ", 1)[1])
    return None


async def test_rate_limits_updated_is_an_event_and_a_gauge() -> None:
    async with OpenAIRealtimeFake() as fake, realtime_call(fake, greeting=None) as call:
        sub = call.engine.bus.subscribe(types={ProviderRateLimits.type})
        await fake.caller_turn("Hello?")
        await call.events.until(said("Okay."))
        events = [e for e in sub.drain() if isinstance(e, ProviderRateLimits)]
        sub.close()
        scrape = call.engine.metrics.render().decode()
    assert fake.errors == []
    assert [(e.call_id, e.provider) for e in events] == [(call.session.call_id, "rt")]
    assert events[0].limits == (
        RateLimit("requests", 5000, 4999, 0.012),
        RateLimit("tokens", 40000, 39000, 1.5),
    )
    assert metric(scrape, "ai_agent_provider_rate_limit_remaining", provider="rt", name="tokens") == 39000


async def test_an_error_event_reaches_the_operator_with_its_code_and_param() -> None:
    async with OpenAIRealtimeFake() as fake, realtime_call(fake, greeting=None) as call:
        await fake.send(
            {
                "type": "error",
                "event_id": "e1",
                "error": {
                    "type": "invalid_request_error",
                    "code": "invalid_value",
                    "message": "Invalid value: 'loud'.",
                    "param": "session.audio.output.voice",
                },
            }
        )
        got = await call.events.until(notice("invalid_value"))
    assert isinstance(got, ProviderNotice) and not got.fatal
    assert "Invalid value" in got.message and "session.audio.output.voice" in got.message


async def test_a_transcription_failure_is_a_notice_not_dropped() -> None:
    async with OpenAIRealtimeFake() as fake, realtime_call(fake, greeting=None) as call:
        await fake.send(
            {
                "type": "conversation.item.input_audio_transcription.failed",
                "event_id": "e2",
                "item_id": "item_9",
                "content_index": 0,
                "error": {"type": "transcription_error", "code": "audio_unintelligible", "message": "No speech."},
            }
        )
        got = await call.events.until(notice("transcription_failed"))
    assert isinstance(got, ProviderNotice) and not got.fatal
    assert "No speech." in got.message and "audio_unintelligible" in got.message


async def test_unknown_event_types_are_counted_each_time_and_logged_once(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING)
    async with OpenAIRealtimeFake() as fake, realtime_call(fake, greeting=None) as call:
        for _ in range(3):
            await fake.send({"type": "response.brand_new", "event_id": "e3"})
        await fake.send({"type": "session.other_new", "event_id": "e4"})
        await fake.send({"type": "error", "event_id": "e5", "error": {"code": "later", "message": "a later signal"}})
        await call.events.until(notice("later"))
        scrape = call.engine.metrics.render().decode()
    name = "ai_agent_provider_events_ignored_total"
    assert metric(scrape, name, provider="rt", type="response.brand_new") == 3
    assert metric(scrape, name, provider="rt", type="session.other_new") == 1
    lines = [r.getMessage() for r in caplog.records if "response.brand_new" in r.getMessage()]
    assert len(lines) == 1, lines


@pytest.mark.parametrize("what", ["greeting", "say", "announce"])
async def test_a_drop_mid_response_resends_its_instructions_exactly_once(what: str) -> None:
    fake = OpenAIRealtimeFake(chunk_ms=100)
    fake.chunk_delay_s = 0.01
    greeting = "Hello, this is the test desk speaking." if what == "greeting" else None
    line = {"say": "Please hold, a colleague takes over.", "announce": "One moment, still looking."}.get(what, greeting)
    assert line
    if what == "greeting":
        fake.drop_after_ms = 200  # half of the line (a Say of the fake lasts 400 ms)
    async with fake:
        async with realtime_call(fake, greeting=greeting) as call:
            if what != "greeting":
                await fake.caller_turn("Hi")
                await call.events.until(lambda e: isinstance(e, ResponseDone))
                fake.drop_after_ms = 200
                assert await call.live.steer("say", line) if what == "say" else await call.live.announce(line)
            await call.events.until(notice("reconnected"))
            await call.events.until(said(line))
    assert fake.errors == [] and fake.connections == 2
    second = creates(fake, fake.connection_starts[1])
    assert len(second) == 1 and line in second[0]["response"]["instructions"]
    assert [line in (c.get("response") or {}).get("instructions", "") for c in creates(fake)].count(True) == 2
