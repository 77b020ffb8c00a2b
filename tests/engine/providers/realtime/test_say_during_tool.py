"""``RealtimeSession.say_during_tool``: each provider's way to say a tool's question while the function call waits,
and that the call's result is still accepted afterwards (every client message validated by the loopback fakes).

OpenAI Realtime (``response.create``) and Deepgram (``InjectAgentMessage``) are covered end to end through the CLI
in tests/engine/elicitation/test_elicitation_realtime.py. Here: Gemini Live (an interim result of a NON_BLOCKING
call; nothing while a BLOCKING call runs, so the voice driver speaks the question itself — a whole call with a WAV
caller shows that), ElevenLabs (``user_message``), and the driver's matching of a provider's transcript to the
lines it said for the question.
"""

from __future__ import annotations

import asyncio
import base64
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml
from realtime_elevenlabs_world import world
from realtime_gemini_fake import API_KEY, GeminiLiveFake, GeminiRig, ScriptedGemini
from realtime_markers import flushed

from engine.app import Engine
from engine.config import load_settings
from engine.events import (
    ElicitationRequested,
    ElicitationResolved,
    ElicitationWaiting,
    Event,
    ToolCompleted,
    TranscriptAdded,
)
from engine.realtime.asking import RealtimeQuestions
from engine.realtime.call import RealtimeVoiceCall
from engine.tools.base import FunctionTool, LatencyMeta, ToolDefinition, ToolExecutionContext, ToolResult
from engine.voice.audio import AudioFrame
from engine.voice.options import VoiceOptions
from engine.voice.pacing import Pacer
from engine.voice.tts import Synthesizer
from engine.voice.wav_backend import NullBackend, WavBackend, read_wav
from tests.engine.elicitation.helpers import SERVER
from tests.engine.voice.helpers import caller_wav

QUESTION = "How many guests should I book the table for?"
READ_BACK = "I heard 4. Is that right?"
#: The fixture's question as the desk says it: its message, then the field by its description and range.
ASKED = f"{QUESTION} Number of guests? A whole number from 1 to 12."


class Slow:
    """Two tools that run until released: ``slow_lookup`` (declared up to 3 s: NON_BLOCKING on Gemini) and
    ``book_table`` (up to 400 ms: BLOCKING)."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = asyncio.Event()

    def tools(self) -> list[FunctionTool]:
        async def run(args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
            self.started.set()
            await self.release.wait()
            return ToolResult.success("done")

        return [
            FunctionTool(
                ToolDefinition(
                    "slow_lookup",
                    "Look something up (slow).",
                    latency=LatencyMeta(estimated_duration_ms=2000, max_duration_ms=3000),
                ),
                run,
            ),
            FunctionTool(
                ToolDefinition(
                    "book_table", "Book a table.", latency=LatencyMeta(estimated_duration_ms=20, max_duration_ms=400)
                ),
                run,
            ),
        ]


def rig(fake: GeminiLiveFake, slow: Slow) -> GeminiRig:
    return GeminiRig(fake, slow.tools(), ["slow_lookup", "book_table"])


async def test_gemini_says_it_as_an_interim_result_of_a_non_blocking_call() -> None:
    slow = Slow()
    async with GeminiLiveFake() as fake:
        async with rig(fake, slow) as r:
            await fake.tool_call(("fc-slow", "slow_lookup", {}))
            await slow.started.wait()
            assert await r.session.say_during_tool(QUESTION) == "toolResponse (willContinue)"
            assert await r.session.say_during_tool(READ_BACK) == "toolResponse (willContinue)"  # one per line
            slow.release.set()
            await r.wait_until(lambda: len(fake.responses()) == 3)
    assert fake.errors == []  # the call stayed open through the interim results; its final result answered it
    first, second, final = fake.responses()
    assert [first["response"]["output"]["say_to_caller"], second["response"]["output"]["say_to_caller"]] == [
        QUESTION,
        READ_BACK,
    ]
    assert first["willContinue"] is second["willContinue"] is True
    assert final["id"] == "fc-slow" and final["willContinue"] is False
    assert final["response"]["output"]["status"] == "success"
    assert len(fake.of_kind("clientContent")) == 1  # the greeting only: no content while the call ran


async def test_gemini_says_nothing_while_a_blocking_call_runs() -> None:
    slow = Slow()
    async with GeminiLiveFake() as fake:
        async with rig(fake, slow) as r:
            await fake.tool_call(("fc-b", "book_table", {}), ("fc-s", "slow_lookup", {}))
            await slow.started.wait()
            sent = len(fake.received)
            # a BLOCKING call is open (alone, or next to a NON_BLOCKING one): the model waits for its result, and
            # any content now would cut it off — the driver must speak instead
            assert await r.session.say_during_tool(QUESTION) is None
            assert len(fake.received) == sent
            slow.release.set()
            await r.wait_until(lambda: len(fake.responses()) == 2)
    assert fake.errors == []
    assert {fr["id"] for fr in fake.responses()} == {"fc-b", "fc-s"}
    assert len(fake.of_kind("clientContent")) == 1


async def test_gemini_operator_steering_waits_for_a_blocking_call_and_its_answer() -> None:
    """The operator's say-now and whisper are content too: while a BLOCKING call runs they would cancel it
    (Gemini 3.x), so both wait for the turn after its result, then go out — the whisper first."""
    slow = Slow()
    async with GeminiLiveFake() as fake:
        async with rig(fake, slow) as r:
            await fake.turn_complete()  # the greeting's turn is over: nothing holds the lines but the call
            await fake.tool_call(("fc-b", "book_table", {}))
            await slow.started.wait()
            sent = len(fake.of_kind("clientContent"))
            assert (
                await r.engine.whisper(r.call.call_id, "Be brief.") == "clientContent (after the tool call in progress)"
            )
            assert await r.engine.say_now(r.call.call_id, "One moment please.") == (
                "clientContent (after the answer in progress)"
            )
            await flushed(fake, r.session, "gemini")
            assert len(fake.of_kind("clientContent")) == sent  # nothing while the call runs
            slow.release.set()
            await r.wait_until(lambda: len(fake.responses()) == 1)
            assert len(fake.of_kind("clientContent")) == sent  # the call's answer comes first
            await fake.said("Booked.")
            await fake.turn_complete()
            await r.wait_until(lambda: len(fake.of_kind("clientContent")) == sent + 2)
    assert fake.errors == []
    whisper, say = fake.of_kind("clientContent")[sent:]
    assert "Be brief." in str(whisper) and whisper["clientContent"]["turnComplete"] is False
    assert "One moment please." in str(say) and say["clientContent"]["turnComplete"] is True


async def test_elevenlabs_says_it_as_a_user_message_and_the_tool_result_still_lands() -> None:
    async with world() as w:
        await w.start()
        tcid = await w.ws.tool_call("slow_lookup", {"q": "tables"})
        await asyncio.wait_for(w.slow_started.wait(), 10)
        assert w.live is not None
        assert await w.live.say_during_tool(QUESTION) == "user_message"
        await w.ws.wait_for(lambda m: isinstance(m, dict) and m.get("type") == "user_message")
        w.release.set()
        result = await w.ws.wait_result(tcid)
    assert w.ws.errors == [] and w.rest.errors == []  # the result answered a call still outstanding
    assert result["is_error"] is False and "found it" in result["result"]
    assert len(w.ws.user_messages) == 1 and QUESTION in w.ws.user_messages[0]


def test_the_providers_transcript_of_a_question_line_is_matched_once() -> None:
    async def run() -> None:
        q = RealtimeQuestions(
            Answers(), Pacer(NullBackend()), VoiceOptions(), 16000, lambda: "c1", lambda: None, lambda: None
        )
        q._echoes.extend(["how many guests should i book the table for", "i heard 4 is that right"])
        assert q.echo("How many guests should I book the table for?")  # punctuation and case aside
        assert not q.echo("How many guests should I book the table for?")  # each line once
        assert not q.echo("Your table is booked for Friday.")  # the model's own words are recorded
        assert q.echo("I heard four. Is that right?")  # a close rendering of the line

    asyncio.run(run())


class Answers:
    """What the driver hands the engine: the caller's words for a question."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, str]] = []
        self.got = asyncio.Event()

    def caller_answered(self, call_id: str, text: str) -> bool:
        self.heard.append((call_id, text))
        self.got.set()
        return True


def test_the_caller_is_heard_locally_at_a_rate_the_vad_cannot_take() -> None:
    """A 22.05 kHz caller (a WAV at that rate): nothing is heard while no question is open (the provider gets the
    frames); while one is, the frames stay local (resampled to 16 kHz for the VAD) and "four" reaches the engine."""

    async def run() -> None:
        rate = 22050
        answers = Answers()
        q = RealtimeQuestions(
            answers, Pacer(NullBackend()), VoiceOptions(), rate, lambda: "c1", lambda: None, lambda: None
        )
        speech = Synthesizer(rate=160, sample_rate=rate).synthesize_blocking("four").samples
        audio = np.concatenate([np.zeros(rate // 2, np.int16), speech, np.zeros(rate, np.int16)])
        frames = [AudioFrame(audio[i : i + rate // 50], rate, i / rate) for i in range(0, audio.size, rate // 50)]
        assert not q.hear(frames[0])  # no question open: the provider hears the caller
        ids: dict[str, Any] = {"elicitation_id": "el-1", "call_id": "c1", "tool_call_id": "t1"}
        q.on_event(
            ElicitationRequested(
                **ids,
                exposed_name="book",
                server="s",
                tool="book",
                ask="caller",
                mode="form",
                message="How many guests?",
            )
        )
        q.on_event(ElicitationWaiting(**ids, who="caller", expect=["one", "two", "three", "four", "five"]))
        assert all(q.hear(f) for f in frames)  # kept here: the provider gets silence instead
        async with asyncio.timeout(30):
            await answers.got.wait()
        assert answers.heard == [("c1", "four")]
        q.on_event(ElicitationResolved(**ids, exposed_name="book", action="accept", by="caller"))
        assert not q.hear(frames[0]) and not q.open
        await q.aclose()

    asyncio.run(run())


class HeardGemini(ScriptedGemini):
    """The scripted Gemini call, measuring the caller audio that arrives while a function call is open."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.while_open: list[float] = []

    async def on_message(self, msg: Any) -> None:
        if isinstance(msg, dict) and "realtimeInput" in msg and self.open_calls:
            pcm = np.frombuffer(base64.b64decode(msg["realtimeInput"]["audio"]["data"]), "<i2")
            self.while_open.append(float(np.sqrt(np.mean(pcm.astype(np.float64) ** 2))) if pcm.size else 0.0)
        await super().on_message(msg)


@pytest.mark.parametrize("era", ["new"])
async def test_a_blocking_gemini_call_gets_the_question_in_the_engines_voice(
    tmp_path: Path, era: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A whole call (the realtime driver, a WAV caller read as fast as the Pacer allows): Gemini asks for
    ``book_table`` BLOCKING; the engine says the question and the read-back itself, hears "four" and "yes", and
    the tool gets 4; Gemini hears silence meanwhile and gets no content while its call is open."""
    spoken = caller_wav(
        tmp_path / "in.wav",
        1.0,
        [("book a table", "en-us", 160, 2.6), ("four", "en-us", 160, 2.8), ("yes", "en-us", 160, 1.0)],
    )
    fake = HeardGemini([(2.3, "book a table", (f"mcp_{era}_book_table", {}), "Booked for four.")])
    monkeypatch.setenv("GEM_TEST_KEY", API_KEY)
    async with fake:
        cfg = tmp_path / "config.yaml"
        cfg.write_text(
            yaml.safe_dump(
                {
                    "engine": {"http": {"enabled": False}, "tool_timeout_ms": 3000},
                    "providers": {
                        "gem": {
                            "type": "gemini_live",
                            "model": "gemini-live-test",
                            "base_url": fake.url,
                            "api_key": "${GEM_TEST_KEY}",
                            "voice": "Kore",
                        }
                    },
                    "mcp": {
                        "servers": {
                            era: {
                                "command": [sys.executable, str(SERVER)],
                                "mode": "auto",
                                "connect_timeout_ms": 60_000,
                            }
                        }
                    },
                    "contexts": {
                        "tables": {
                            "provider": "gem",
                            "prompt": "You book tables.",
                            "greeting": "Table line.",
                            "tools": [f"mcp_{era}_*"],
                            "elicitation": {"ask": "caller"},
                        }
                    },
                }
            )
        )
        async with Engine(load_settings(cfg)) as engine:
            sub = engine.bus.subscribe(maxsize=10_000)
            backend = WavBackend(tmp_path / "in.wav", tmp_path / "out.wav", timeline=True)
            call = RealtimeVoiceCall(engine.voice_parts, backend, "tables", settle_s=0.3)
            async with asyncio.timeout(60):
                await call.run()
            sub.close()
            events: list[Event] = [e async for e in sub]
    assert fake.errors == []
    (done,) = [e for e in events if isinstance(e, ElicitationResolved)]
    assert (done.action, done.by, done.content) == ("accept", "caller", {"guests": 4})
    assert [(e.exposed_name, e.message) for e in events if isinstance(e, ToolCompleted)] == [
        (f"mcp_{era}_book_table", 'accept {"guests":4}')
    ]
    assert call.questions.said_locally == [ASKED, READ_BACK]
    said = [(e.role, e.text) for e in events if isinstance(e, TranscriptAdded)]
    assert said == [
        ("assistant", "Table line."),
        ("user", "book a table"),
        ("assistant", ASKED),
        ("user", "four"),
        ("assistant", READ_BACK),
        ("user", "yes"),
        ("assistant", "Booked for four."),
    ]
    assert len(fake.of_kind("clientContent")) == 1  # the greeting: nothing else while the BLOCKING call was open
    assert len(fake.while_open) > 20 and max(fake.while_open) < 50  # "four" and "yes" never reached Gemini
    # the question plays in out.wav after "book a table", before the caller's "four"
    book, four, _ = spoken
    out = read_wav(tmp_path / "out.wav")
    loud = np.flatnonzero(np.abs(out.samples.astype(np.int32)) > 2000) / out.sample_rate
    assert ((loud > book.end) & (loud < four.start)).any()


async def test_the_desk_speaks_on_a_realtime_call_only_through_its_voice_driver() -> None:
    """The elicitation desk's voice: a realtime call started with ``deliver`` (as the voice driver starts it) gets
    the line on the transcript and through ``deliver``; one started without (no audio around it) cannot be asked."""
    slow = Slow()
    async with GeminiLiveFake() as fake:
        async with rig(fake, slow) as r:
            voice = r.engine.elicitations.voice
            assert voice is not None
            sub = r.engine.bus.subscribe(types={TranscriptAdded.type})
            assert await voice.say(r.call.call_id, QUESTION) is False  # nothing would say it, nothing would hear
            lines: list[str] = []

            async def deliver(session: Any, text: str) -> None:
                lines.append(text)

            call, live = await r.engine.calls.start_realtime_call("desk", audio=r.audio, deliver=deliver)
            try:
                assert await voice.say(call.call_id, QUESTION) is True
            finally:
                await live.aclose()
                await r.engine.end_call(call.call_id)
            sub.close()
            said = [(e.call_id, e.text) async for e in sub if isinstance(e, TranscriptAdded) and e.role == "assistant"]
    assert lines == [QUESTION]
    assert (call.call_id, QUESTION) in said and (r.call.call_id, QUESTION) not in said
