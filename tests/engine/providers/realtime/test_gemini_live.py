"""Gemini Live through the real engine against the loopback fake: setup, audio, transcripts, tools, hang-up.

Every client message is validated by the fake against google-genai's ``LiveClientMessage`` and the lifecycle
rules; each test ends asserting ``fake.errors == []``.
"""

from __future__ import annotations

import asyncio
import base64
import json
from typing import Any

import pytest
from harness import ToolBox
from realtime_gemini_fake import API_KEY, GeminiLiveFake, GeminiRig
from realtime_markers import flushed, silence

from engine.realtime.session import (
    PCM16_8K,
    PCMU_8K,
    AssistantAudio,
    AssistantInterrupted,
    AssistantText,
    CallerText,
    ResponseDone,
    UsageReport,
)
from engine.sessions.history import ToolCallItem, ToolResultItem
from engine.tools.base import FunctionTool, LatencyMeta, ToolDefinition, ToolExecutionContext, ToolParameter, ToolResult

BASE = ["get_weather", "get_time", "broken_tool"]


class Slow:
    """A slow tool (declared max 3 s: NON_BLOCKING) and a gated fast one, both released by the test."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()
        self.finished: list[str] = []
        self.cancelled: list[str] = []

    def tools(self) -> list[FunctionTool]:
        async def run(name: str, args: dict[str, Any]) -> ToolResult:
            self.started.set()
            try:
                await self.release.wait()
            except asyncio.CancelledError:
                self.cancelled.append(name)
                raise
            self.finished.append(name)
            return ToolResult.success(f"{name} done", {"args": args})

        async def slow(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
            return await run("slow_lookup", args)

        async def gated(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
            return await run("book_table", args)

        return [
            FunctionTool(
                ToolDefinition(
                    "slow_lookup",
                    "Look something up in the archive (slow).",
                    parameters=(ToolParameter("q", "string", "What to look up"),),
                    latency=LatencyMeta(estimated_duration_ms=2000, max_duration_ms=3000),
                ),
                slow,
            ),
            FunctionTool(
                ToolDefinition(
                    "book_table",
                    "Book a table.",
                    parameters=(ToolParameter("people", "integer", "How many"),),
                    latency=LatencyMeta(estimated_duration_ms=20, max_duration_ms=400),
                ),
                gated,
            ),
        ]


def rig(fake: GeminiLiveFake, box: ToolBox, slow: Slow | None = None, **kw: Any) -> GeminiRig:
    tools = [*box.tools(), *(slow.tools() if slow else [])]
    allow = kw.pop("allow", [*BASE, "slow_lookup", "book_table", "hangup_call"])
    return GeminiRig(fake, tools, allow, **kw)


async def test_setup_greeting_and_key_only_in_the_query() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake, ToolBox(), Slow()) as r:
            await fake.wait_for(lambda m: isinstance(m, dict) and "clientContent" in m)
            assert r.call.shown_tools == {*BASE, "slow_lookup", "book_table", "hangup_call"}
    assert fake.errors == []
    first = fake.received[0]
    assert isinstance(first, dict) and list(first) == ["setup"]
    setup = fake.setups[0]
    assert setup["model"] == "models/gemini-live-test"
    assert setup["generationConfig"] == {
        "responseModalities": ["AUDIO"],
        "speechConfig": {"voiceConfig": {"prebuiltVoiceConfig": {"voiceName": "Kore"}}},
    }
    assert setup["systemInstruction"] == {"parts": [{"text": "You are a test agent."}]}
    assert setup["realtimeInputConfig"] == {"automaticActivityDetection": {"disabled": False}}
    assert setup["inputAudioTranscription"] == {} and setup["outputAudioTranscription"] == {}
    assert setup["sessionResumption"] == {}
    decls = {d["name"]: d for g in setup["tools"] for d in g["functionDeclarations"]}
    assert decls["get_weather"]["parametersJsonSchema"]["required"] == ["city"]
    assert decls["slow_lookup"]["behavior"] == "NON_BLOCKING"  # declared beyond the STANDARD budget
    assert decls["book_table"]["behavior"] == "BLOCKING"
    assert decls["hangup_call"]["behavior"] == "BLOCKING"
    greet = fake.of_kind("clientContent")[0]["clientContent"]
    assert greet["turnComplete"] is True and "Hello, test desk." in greet["turns"][0]["parts"][0]["text"]
    assert f"key={API_KEY}" in fake.request_paths[0]
    assert API_KEY not in json.dumps(fake.json_messages())


@pytest.mark.parametrize("binary", [True, False], ids=["binary-frames", "text-frames"])
async def test_audio_transcripts_turns_and_usage(binary: bool) -> None:
    """The service sends its JSON in binary frames (setupComplete included); text frames are read the same."""
    pcm_in = bytes(range(128)) * 10  # 1280 bytes = 40 ms at 16 kHz, one message (input_batch_ms)
    pcm_out = b"\x01\x02" * 2400  # 100 ms at 24 kHz
    fake = GeminiLiveFake()
    fake.binary_frames = binary
    async with fake:
        async with rig(fake, ToolBox()) as r:
            assert (r.session.input_spec.rate, r.session.output_spec.rate) == (16000, 24000)
            await r.session.send_audio(pcm_in)
            msg = await fake.wait_for(lambda m: isinstance(m, dict) and "realtimeInput" in m)
            assert isinstance(msg, dict)
            assert msg["realtimeInput"]["audio"]["mimeType"] == "audio/pcm;rate=16000"
            assert base64.b64decode(msg["realtimeInput"]["audio"]["data"]) == pcm_in
            await fake.heard("What's the ")
            await fake.heard("weather?")
            await fake.audio(pcm_out)
            await fake.said("It is sunny.")
            await fake.turn_complete({"promptTokenCount": 120, "responseTokenCount": 40, "totalTokenCount": 160})
            usage = await r.wait_event(lambda e: isinstance(e, UsageReport))
    assert fake.errors == []
    kinds = [type(e).__name__ for e in r.events]
    assert kinds.index("CallerText") < kinds.index("AssistantAudio") < kinds.index("ResponseDone")
    assert kinds.count("CallerSpeechStopped") == 1  # the caller's turn ended when the model answered
    stopped = kinds.index("CallerSpeechStopped")
    assert kinds[stopped + 1] == "CallerText" and r.events[stopped + 1].final
    assert [e.text for e in r.events if isinstance(e, CallerText) and e.final] == ["What's the weather?"]
    assert [e.text for e in r.events if isinstance(e, AssistantText) and e.final] == ["It is sunny."]
    assert b"".join(e.data for e in r.events if isinstance(e, AssistantAudio)) == pcm_out
    assert next(e for e in r.events if isinstance(e, ResponseDone)).status == "completed"
    assert (usage.input_tokens, usage.output_tokens) == (120, 40)
    assert abs(usage.input_audio_s - 0.04) < 1e-9 and abs(usage.output_audio_s - 0.1) < 1e-9


async def test_phone_audio_goes_at_8khz_without_resampling() -> None:
    """On the phone (μ-law 8 kHz) the session takes PCM16 at 8 kHz and tells Gemini the rate, which it resamples
    itself: no upsampling in the engine (it adds nothing to telephone audio and doubles the bytes). Usage counts
    the seconds at that rate."""
    pcm_in = b"\x10\x00" * 1600  # 200 ms at 8 kHz
    async with GeminiLiveFake() as fake:
        async with rig(fake, ToolBox(), audio=PCMU_8K) as r:
            assert r.session.input_spec == PCM16_8K
            await r.session.send_audio(pcm_in)
            msg = await fake.wait_for(lambda m: isinstance(m, dict) and "realtimeInput" in m)
            await fake.turn_complete({"promptTokenCount": 1, "responseTokenCount": 1, "totalTokenCount": 2})
            usage = await r.wait_event(lambda e: isinstance(e, UsageReport))
    assert fake.errors == []
    assert isinstance(msg, dict) and msg["realtimeInput"]["audio"]["mimeType"] == "audio/pcm;rate=8000"
    assert base64.b64decode(msg["realtimeInput"]["audio"]["data"]) == pcm_in
    assert abs(usage.input_audio_s - 0.2) < 1e-9


@pytest.mark.parametrize(("batch_ms", "messages"), [(None, [1280, 1280, 1280]), (20, [640] * 7), (60, [1920, 1920])])
async def test_caller_frames_are_joined_up_to_input_batch_ms(batch_ms: int | None, messages: list[int]) -> None:
    """20 ms frames go out in pieces of ``input_batch_ms`` (40 by default: half the messages), in order, nothing
    lost or repeated; the frame that would start a new piece waits for the next one."""
    frames = [bytes([i]) * 640 for i in range(7)]  # 20 ms each at 16 kHz
    options = {} if batch_ms is None else {"input_batch_ms": batch_ms}
    async with GeminiLiveFake() as fake:
        async with rig(fake, ToolBox(), options=options) as r:
            for f in frames:
                await r.session.send_audio(f)
            await r.wait_until(lambda: sum(map(len, fake.audio_pieces())) >= sum(messages))
            marker = silence(r.session)
            await flushed(fake, r.session, "gemini")  # nothing else came before it
    assert fake.errors == []
    *pieces, last = fake.audio_pieces()
    assert [len(p) for p in pieces] == messages
    assert b"".join(pieces) == b"".join(frames)[: sum(messages)]
    assert last == b"".join(frames)[sum(messages) :] + marker  # the frame held back went with the next one


async def test_tool_call_answered_with_same_id_and_name() -> None:
    box = ToolBox()
    async with GeminiLiveFake() as fake:
        async with rig(fake, box) as r:
            await fake.tool_call(("function-call-1234", "get_weather", {"city": "Paris"}))
            await fake.wait_for(lambda m: isinstance(m, dict) and "toolResponse" in m)
            history = r.call.history.items()
    assert fake.errors == []
    (fr,) = fake.responses()
    assert fr["id"] == "function-call-1234" and fr["name"] == "get_weather"
    assert fr["response"]["output"]["status"] == "success"
    assert fr["response"]["output"]["data"] == {"temp_c": 18} and "scheduling" not in fr  # BLOCKING
    assert box.calls == [("get_weather", {"city": "Paris"})]
    call = next(i for i in history if isinstance(i, ToolCallItem))
    assert dict(call.provider_ids)["provider"] == "function-call-1234"


async def test_parallel_calls_run_concurrently_and_errors_go_under_error() -> None:
    box = ToolBox()
    box.barrier = asyncio.Barrier(2)
    async with GeminiLiveFake() as fake:
        async with rig(fake, box) as r:
            await fake.tool_call(
                ("fc-a", "get_weather", {"city": "Oslo"}),
                ("fc-b", "get_time", {"zone": "Europe/Oslo"}),
                ("fc-c", "broken_tool", {"x": 1}),
            )
            await r.wait_until(lambda: len(fake.responses()) == 3)
    assert fake.errors == []
    by_id = {fr["id"]: fr for fr in fake.responses()}
    assert by_id["fc-a"]["name"] == "get_weather" and "output" in by_id["fc-a"]["response"]
    assert by_id["fc-b"]["name"] == "get_time" and "output" in by_id["fc-b"]["response"]
    assert by_id["fc-c"]["response"]["error"]["message"] == "the backend is down"
    assert fake.open_calls == {}


async def test_cancelled_call_is_never_answered_and_its_tool_is_cancelled() -> None:
    slow = Slow()
    async with GeminiLiveFake() as fake:
        async with rig(fake, ToolBox(), slow) as r:
            await fake.tool_call(("fc-book", "book_table", {"people": 2}), ("fc-w", "get_weather", {"city": "Rome"}))
            await slow.started.wait()
            await fake.cancel("fc-book")
            await r.wait_until(lambda: slow.cancelled == ["book_table"])
            slow.release.set()
            await fake.wait_for(lambda m: isinstance(m, dict) and "toolResponse" in m)
            await fake.turn_complete()  # a later message still flows: nothing late was sent for fc-book
            await r.wait_event(lambda e: isinstance(e, ResponseDone))
            history = r.call.history.items()
    assert fake.errors == []
    assert [fr["id"] for fr in fake.responses()] == ["fc-w"]
    assert slow.finished == []
    cancelled = next(i for i in history if isinstance(i, ToolCallItem) and i.name == "book_table")
    (res,) = [i for i in history if isinstance(i, ToolResultItem) and i.call_id == cancelled.id]
    assert res.status == "error" and "cancelled by Gemini" in res.message


async def test_barge_in_interrupts_the_answer() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake, ToolBox()) as r:
            await fake.audio(b"\x00\x00" * 480)
            await fake.said("Let me tell you a long")
            await fake.send({"voiceActivity": {"voiceActivityType": "ACTIVITY_START"}})
            await fake.interrupted()
            await fake.turn_complete()
            done = await r.wait_event(lambda e: isinstance(e, ResponseDone))
            await fake.audio(b"\x01\x00" * 480)  # the next answer, after the cut
            await fake.turn_complete()
            await r.wait_until(lambda: len([e for e in r.events if isinstance(e, ResponseDone)]) == 2)
    assert fake.errors == []
    kinds = [type(e).__name__ for e in r.events]
    assert kinds.index("CallerSpeechStarted") < kinds.index("AssistantInterrupted")
    cut = next(e for e in r.events if isinstance(e, AssistantInterrupted))
    before, after = [e for e in r.events if isinstance(e, AssistantAudio)]
    assert cut.item_id == before.item_id and after.item_id != before.item_id
    assert done.status == "interrupted"
    assert [e.status for e in r.events if isinstance(e, ResponseDone)] == ["interrupted", "completed"]
    assert [e.text for e in r.events if isinstance(e, AssistantText) and e.final] == ["Let me tell you a long"]


async def test_slow_tool_is_non_blocking_with_a_when_idle_announcement() -> None:
    slow = Slow()
    async with GeminiLiveFake() as fake:
        async with rig(fake, ToolBox(), slow) as r:
            await fake.tool_call(("fc-slow", "slow_lookup", {"q": "1984 archive"}))
            await slow.started.wait()
            assert await r.session.announce("One moment while I check that.") is True
            slow.release.set()
            await r.wait_until(lambda: len(fake.responses()) == 2)
            assert await r.session.announce("Still there?") is True  # idle, nothing running: a user turn
            await r.wait_until(lambda: len(fake.of_kind("clientContent")) == 2)
    assert fake.errors == []
    interim, final = fake.responses()
    assert interim["willContinue"] is True and interim["scheduling"] == "WHEN_IDLE"
    assert interim["response"]["output"]["say_to_caller"] == "One moment while I check that."
    assert final["id"] == interim["id"] == "fc-slow" and final["scheduling"] == "WHEN_IDLE"
    assert final["willContinue"] is False and final["response"]["output"]["status"] == "success"
    assert "Still there?" in json.dumps(fake.of_kind("clientContent")[-1])


async def test_no_announcement_while_a_blocking_call_runs() -> None:
    slow = Slow()
    async with GeminiLiveFake() as fake:
        async with rig(fake, ToolBox(), slow) as r:
            await fake.tool_call(("fc-b", "book_table", {"people": 4}))
            await slow.started.wait()
            assert await r.session.announce("One moment.") is False
            slow.release.set()
            await fake.wait_for(lambda m: isinstance(m, dict) and "toolResponse" in m)
    assert fake.errors == []
    assert len(fake.of_kind("clientContent")) == 1  # the greeting only


async def test_hangup_call_then_farewell() -> None:
    async with GeminiLiveFake() as fake:
        async with rig(fake, ToolBox()) as r:
            await fake.tool_call(("fc-bye", "hangup_call", {"farewell_message": "Goodbye!"}))
            await fake.wait_for(lambda m: isinstance(m, dict) and "toolResponse" in m)
            assert r.call.hangup_requested and r.call.farewell == "Goodbye!"
            await fake.audio(b"\x00\x00" * 2400)
            await fake.said("Goodbye!")
            await fake.turn_complete()
            await r.wait_event(lambda e: isinstance(e, ResponseDone))
    assert fake.errors == []
    (fr,) = fake.responses()
    assert fr["name"] == "hangup_call" and fr["response"]["output"]["message"] == "Goodbye!"
    assert [e.text for e in r.events if isinstance(e, AssistantText) and e.final] == ["Goodbye!"]
