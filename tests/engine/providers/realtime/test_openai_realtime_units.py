"""OpenAI Realtime pieces on their own: options, payloads, the response and audio ledgers, and the fake's checks."""

from __future__ import annotations

import json
from typing import Any

import pytest
from realtime_openai_fake import OpenAIRealtimeFake
from realtime_openai_harness import provider_config

from engine.config.models import ProviderConfig
from engine.providers.base import ProviderError
from engine.providers.factory import create_provider
from engine.providers.rendering.names import OPENAI_RULE, NameMap
from engine.realtime import openai_realtime_wire as wire
from engine.realtime.audio import negotiate
from engine.realtime.openai_realtime_state import AudioLedger, ResponseLedger
from engine.realtime.session import PCM16_8K, PCM16_16K, PCM16_24K, PCMA_8K, PCMU_8K
from engine.realtime.socket import RealtimeSocket
from engine.sessions.history import HistoryItem, Message, ToolCallItem, ToolResultItem

# ---------------------------------------------------------------------------------------------------- config


def test_options_default_to_server_vad_and_transcription() -> None:
    opts = wire.RealtimeOptions.parse("rt", {})
    assert opts.turn_detection == {
        "type": "server_vad",
        "threshold": 0.5,
        "prefix_padding_ms": 300,
        "silence_duration_ms": 500,
        "create_response": True,
        "interrupt_response": True,
    }
    assert opts.transcription == {"model": "gpt-4o-mini-transcribe"} and opts.reconnect_tries == 5


@pytest.mark.parametrize(
    ("options", "where"),
    [
        ({"turn_detection": {"treshold": 0.4}}, "providers.rt.options.turn_detection.treshold: unknown"),
        ({"turn_detection": {"threshold": "high"}}, "providers.rt.options.turn_detection.threshold: wrong type"),
        ({"turn_detection": {"create_response": 1}}, "turn_detection.create_response: wrong type"),
        ({"turn_detection": {"type": "push_to_talk"}}, "turn_detection.type: 'server_vad' or 'semantic_vad'"),
        ({"turn_detection": {"type": "semantic_vad", "threshold": 0.3}}, "threshold only apply to server_vad"),
        ({"turn_detection": {"eagerness": "low"}}, "eagerness: only for semantic_vad"),
        ({"turn_detection": None}, "turn_detection: a mapping"),
        ({"transcription": {"model": "whisper-1", "speed": 2}}, "transcription: unknown speed"),
        ({"transcription": 3}, "transcription: a model name"),
        ({"noise_reduction": "studio"}, "noise_reduction: 'near_field', 'far_field' or null"),
        ({"reconnect_tries": -1}, "reconnect_tries: an integer from 0 to 100"),
        ({"replay_items": True}, "replay_items: an integer"),
        ({"turn_detecton": {}}, "providers.rt.options.turn_detecton: unknown option (known: noise_reduction"),
    ],
)
def test_bad_options_name_the_key(options: dict[str, Any], where: str) -> None:
    with pytest.raises(ValueError) as ei:
        wire.RealtimeOptions.parse("rt", options)
    assert where in str(ei.value)


def test_semantic_vad_and_transcription_settings_pass_through() -> None:
    opts = wire.RealtimeOptions.parse(
        "rt",
        {
            "turn_detection": {"type": "semantic_vad", "eagerness": "low"},
            "transcription": {"model": "gpt-4o-transcribe", "language": "de"},
            "noise_reduction": "near_field",
        },
    )
    assert opts.turn_detection == {
        "type": "semantic_vad",
        "create_response": True,
        "interrupt_response": True,
        "eagerness": "low",
    }
    assert opts.transcription == {"model": "gpt-4o-transcribe", "language": "de"}
    assert wire.RealtimeOptions.parse("rt", {"transcription": False}).transcription is None


@pytest.mark.parametrize(
    ("extra", "words"),
    [
        ({"model": None}, "needs 'model'"),
        ({"max_tokens": 5000}, "max_tokens: OpenAI Realtime takes 1 to 4096"),
        ({"base_url": "https://api.openai.com/v1?key=SECRET"}, "base_url: a ws:// or wss:// URL"),
    ],
)
def test_bad_provider_config_is_a_provider_error(extra: dict[str, Any], words: str) -> None:
    cfg = provider_config("ws://127.0.0.1:9/v1/realtime").model_copy(update=extra)
    with pytest.raises(ProviderError) as ei:
        create_provider("rt", cfg)
    assert words in str(ei.value) and "SECRET" not in str(ei.value)


def test_url_and_headers() -> None:
    p = create_provider("rt", provider_config("ws://127.0.0.1:9/v1/realtime?x=1"))
    assert p.url == "ws://127.0.0.1:9/v1/realtime?x=1&model=gpt-realtime"  # type: ignore[attr-defined]
    default = create_provider("d", ProviderConfig(type="openai_realtime", model="gpt-realtime-mini"))
    assert default.url == "wss://api.openai.com/v1/realtime?model=gpt-realtime-mini"  # type: ignore[attr-defined]
    assert default.headers() == {}  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------------------------------- payloads


@pytest.mark.parametrize(
    ("native", "chosen", "wire_format"),
    [
        (PCMU_8K, PCMU_8K, {"type": "audio/pcmu"}),
        (PCMA_8K, PCMA_8K, {"type": "audio/pcma"}),
        (PCM16_8K, PCM16_24K, {"type": "audio/pcm", "rate": 24000}),
        (PCM16_16K, PCM16_24K, {"type": "audio/pcm", "rate": 24000}),
        (PCM16_24K, PCM16_24K, {"type": "audio/pcm", "rate": 24000}),
    ],
)
def test_negotiated_formats(native: Any, chosen: Any, wire_format: dict[str, Any]) -> None:
    spec = negotiate(native, wire.FORMATS)
    assert spec == chosen and wire.audio_format(spec) == wire_format


def test_a_format_the_api_lacks_is_refused() -> None:
    with pytest.raises(ValueError, match="pcm16/16000"):
        wire.audio_format(PCM16_16K)


def test_replay_keeps_the_last_items_without_orphan_results() -> None:
    names = NameMap(OPENAI_RULE, ["mcp.weather"])
    call = ToolCallItem("tc_1", "mcp.weather", {"city": "Oslo"}, 1)
    own = ToolCallItem("tc_2", "mcp.weather", {"city": "Rome"}, 2, provider_ids=(("provider", "call_Own"),))
    history: list[HistoryItem] = [
        Message("system", "prompt"),
        Message("user", "hi"),
        call,
        ToolResultItem("tc_1", "mcp.weather", "success", "cold"),
        own,
        ToolResultItem("tc_2", "mcp.weather", "error", "down"),
        Message("assistant", "It is down."),
    ]
    items = wire.replay_items(history, names, limit=4)  # cuts between tc_1 and its result
    assert [i["type"] for i in items] == ["function_call", "function_call_output", "message"]
    assert items[0] == {
        "type": "function_call",
        "call_id": "call_Own",
        "name": "mcp_weather",
        "arguments": json.dumps({"city": "Rome"}),
    }
    assert json.loads(items[1]["output"])["status"] == "error"
    assert items[2]["content"] == [{"type": "output_text", "text": "It is down."}]
    full = wire.replay_items(history, names, limit=40)
    assert full[0] == {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
    assert full[1]["call_id"] == "call_tc_1"  # no provider id: rendered from the canonical one
    assert wire.replay_items(history, names, limit=0) == []


def test_usage_report() -> None:
    assert wire.usage_report(None, 0.0, 0.0) is None
    r = wire.usage_report({"input_tokens": 12, "output_tokens": True}, 1.23456, 0.5)
    assert r is not None and (r.input_tokens, r.output_tokens, r.input_audio_s, r.output_audio_s) == (12, 0, 1.235, 0.5)


# ---------------------------------------------------------------------------------------------------- ledgers


def test_response_ledger_queues_answers_first_and_one_announcement() -> None:
    led = ResponseLedger()
    led.begin("e1", "greeting", {"instructions": "hi"})
    assert led.busy and led.next_request() is None
    led.queue("announce", {"instructions": "a"})
    led.queue("announce", {"instructions": "b"})
    led.queue("tools", None)
    led.created("resp_1")
    assert led.active == "resp_1" and led.requested is None and list(led.sent) == ["e1"]
    led.record_call("resp_1", {"call_id": "c1", "name": "f", "arguments": "{}"})
    led.record_call("resp_1", {"call_id": "c1", "name": "f", "arguments": "{}"})  # done + output_item.done
    assert [c.call_id for c in led.done("resp_1")] == ["c1"] and not led.busy
    assert led.next_request() == ("tools", None)
    assert led.next_request() == ("announce", {"instructions": "b"})
    with pytest.raises(ValueError):
        led.record_call("r", {"call_id": "", "name": "f"})


def test_response_ledger_asks_again_only_for_answers_that_met_a_vad_response() -> None:
    conflict = "conversation_already_has_active_response"
    led = ResponseLedger()
    led.begin("e1", "tools", None)
    led.created("resp_vad")  # server VAD's response, crossing ours on the wire
    assert led.refused("e1", conflict)
    assert list(led.pending) == [("tools", None)]
    led.pending.clear()
    led.done("resp_vad")
    led.begin("e2", "announce", {"instructions": "x"})
    assert led.refused("e2", conflict) and not led.pending and not led.busy  # stale: dropped
    led.begin("e3", "greeting", {"instructions": "x"})
    assert not led.refused("e3", "invalid_value") and not led.busy
    assert not led.refused("e_unknown", conflict)
    for i in range(40):
        led.begin(f"x{i}", "tools", None)
    assert len(led.sent) == 16
    assert led.reset() and not led.busy


def test_audio_ledger_truncates_once_and_only_to_audio_received() -> None:
    led = AudioLedger(PCMU_8K, PCMU_8K)
    led.received("item_1", 8000)  # 1 s of μ-law
    assert led.truncation("item_x", 10) is None
    assert led.truncation(None, 1500.7) == ("item_1", 1000)  # the last item; never past what came
    assert led.truncation("item_1", 10) is None  # once
    led.received("item_2", 800)
    led.finished.add("item_2")
    assert led.truncation("item_2", 100) is None  # heard to its end
    led.in_bytes = 1600
    assert led.usage_seconds() == (0.2, 1.1) and led.usage_seconds() == (0.0, 0.0)
    for i in range(300):  # a long call keeps only the latest items
        led.received(f"n{i}", 8)
        led.finished.add(f"n{i}")
    assert len(led.received_ms) == 256 and "item_1" not in led.truncated and "n0" not in led.finished
    led.reset()
    assert led.truncation(None, 10) is None


# ---------------------------------------------------------------------------------------------------- the fake


async def test_the_fake_rejects_what_the_sdk_types_and_lifecycle_rules_reject() -> None:
    async with OpenAIRealtimeFake() as fake:
        sock = await RealtimeSocket.open("t", fake.url + "?model=m")
        session = "session.update"
        tool = {"type": "function", "name": "f", "strict": True}
        pcm16k = {"output": {"format": {"type": "audio/pcm", "rate": 16000}}}
        orphan = {"type": "function_call_output", "call_id": "call_nope", "output": "x"}
        bad: list[dict[str, Any]] = [
            {"type": "response.create"},  # before any session.update
            {"type": session, "session": {"type": "realtime", "tools": [tool]}},
            {"type": session, "session": {"type": "realtime", "audio": pcm16k}},
            {"type": session, "session": {"type": "realtime", "modalities": ["audio"]}},
            {"type": "conversation.item.create", "item": orphan},
            {"type": "conversation.item.truncate", "item_id": "item_nope", "content_index": 0, "audio_end_ms": 5},
            {"type": "input_audio_buffer.append", "audio": "%%%"},
            {"type": "response.audio.delta"},
        ]
        for msg in bad:
            await sock.send_json(msg)
        await fake.wait_for(lambda m: isinstance(m, dict) and m["type"] == "response.audio.delta")
        await sock.close()
    errors = "\n".join(fake.errors)
    assert len(fake.errors) == len(bad), errors
    for words in (
        "response.create before the first session.update",
        "session.tools[0].strict",
        "rejected by the SDK types",
        "session.modalities",
        "unknown call_id 'call_nope'",
        "which the fake never sent",
        "not base64",
        "'response.audio.delta' is not a client event type",
    ):
        assert words in errors
