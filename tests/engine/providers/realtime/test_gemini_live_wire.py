"""Gemini Live's client-side rules on their own: options, behaviour per latency class, bounded results, SDK checks."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from pydantic import SecretStr
from realtime_gemini_fake import validate_live_client_message

from engine.config.models import ProviderConfig
from engine.providers.factory import create_provider
from engine.realtime.gemini_families import family_for
from engine.realtime.gemini_live import GeminiLiveProvider
from engine.realtime.gemini_wire import (
    GeminiOptions,
    bounded_payload,
    function_response,
    interim_response,
    is_non_blocking,
    json_safe,
    setup_message,
    transcript_replay,
)
from engine.sessions.history import History, ToolResultItem
from engine.tools.base import LatencyMeta, ToolCategory, ToolDefinition

OPTS = GeminiOptions()


def provider(**options: Any) -> GeminiLiveProvider:
    cfg = ProviderConfig(type="gemini_live", model="gemini-x", api_key=SecretStr("k/ey+1"), options=options)
    p = create_provider("gem", cfg)
    assert isinstance(p, GeminiLiveProvider)
    return p


def test_factory_builds_it_and_the_key_goes_only_into_the_query() -> None:
    p = provider()
    assert p.connect_url().endswith("BidiGenerateContent?key=k%2Fey%2B1")
    assert p.connect_url().startswith("wss://generativelanguage.googleapis.com/ws/")
    p.url = "ws://127.0.0.1:9/x?alt=1"
    assert p.connect_url() == "ws://127.0.0.1:9/x?alt=1&key=k%2Fey%2B1"


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"max_result_bytes": 0}, "options.max_result_bytes: a positive whole number"),
        ({"result_scheduling": "SOON"}, "options.result_scheduling: one of WHEN_IDLE"),
        ({"blocking": "get_weather"}, "options.blocking: a list of tool names"),
        ({"gemini_schema": "xml"}, "options.gemini_schema"),
        ({"vad": True}, "unknown option(s) vad"),
        ({"context_window_compression": "yes"}, "options.context_window_compression: true or false"),
        ({"input_batch_ms": 500}, "options.input_batch_ms: between 10 and 200 ms, not 500"),
        ({"input_batch_ms": 0}, "options.input_batch_ms: a positive whole number"),
    ],
)
def test_bad_options_are_named(options: dict[str, Any], words: str) -> None:
    with pytest.raises(Exception) as ei:
        provider(**options)
    assert "providers.gem" in str(ei.value) and words in str(ei.value)


def test_model_is_required() -> None:
    with pytest.raises(Exception, match="needs 'model'"):
        create_provider("gem", ProviderConfig(type="gemini_live"))


def d(name: str, **kw: Any) -> ToolDefinition:
    return ToolDefinition(name, "x", **kw)


def test_behaviour_follows_the_latency_class() -> None:
    assert not is_non_blocking(d("unknown_latency"), OPTS)  # no information: STANDARD
    assert not is_non_blocking(d("fast", latency=LatencyMeta(max_duration_ms=300)), OPTS)
    assert not is_non_blocking(d("standard", latency=LatencyMeta(max_duration_ms=1500)), OPTS)
    assert is_non_blocking(d("deep", latency=LatencyMeta(max_duration_ms=3000)), OPTS)
    assert is_non_blocking(d("p50", latency=LatencyMeta(estimated_duration_ms=800)), OPTS)  # × 3 > 1.5 s
    slow_hangup = d("hangup", category=ToolCategory.TELEPHONY, latency=LatencyMeta(max_duration_ms=9000))
    assert not is_non_blocking(slow_hangup, OPTS)
    forced = GeminiOptions(blocking=("deep",), non_blocking=("fast",))
    assert not is_non_blocking(d("deep", latency=LatencyMeta(max_duration_ms=3000)), forced)
    assert is_non_blocking(d("fast", latency=LatencyMeta(max_duration_ms=300)), forced)
    off = GeminiOptions(allow_non_blocking=False, non_blocking=("fast",))
    assert not is_non_blocking(d("deep", latency=LatencyMeta(max_duration_ms=3000)), off)
    assert not is_non_blocking(d("fast"), off)


def test_json_safe_values_and_depth() -> None:
    deep: Any = "leaf"
    for _ in range(10):
        deep = [deep]
    out = json_safe({1: math.inf, "b": b"abc", "s": {1, 2}, "o": object(), "deep": deep}, max_depth=4)
    assert out["1"] is None and out["b"] == "<3 bytes>" and sorted(out["s"]) == [1, 2]
    assert out["o"].startswith("<object object")
    collapsed = out["deep"][0][0][0]  # 4 levels of containers, then JSON text
    assert isinstance(collapsed, str) and collapsed.startswith("[[") and "leaf" in collapsed
    json.dumps(out, allow_nan=False)


def test_bounded_payload_keeps_small_results_and_cuts_big_ones() -> None:
    small = ToolResultItem("tc_1", "t", "success", "ok", {"a": 1})
    assert bounded_payload(small, OPTS) == {"status": "success", "message": "ok", "data": {"a": 1}}
    big = ToolResultItem("tc_2", "t", "success", "m" * 50_000, {"rows": ["x" * 1000] * 100})
    out = bounded_payload(big, GeminiOptions(max_result_bytes=2000))
    assert len(json.dumps(out)) <= 2000 and out["status"] == "success"
    assert out["data_truncated"].startswith('{"rows": ["xxx') and "cut to 2000 bytes" in out["note"]


def test_function_responses_validate_against_the_sdk() -> None:
    ok = ToolResultItem("tc_1", "t", "success", "ok", {"a": 1})
    bad = ToolResultItem("tc_2", "t", "rejected", "not shown")
    blocking = function_response("id-1", "get_x", ok, OPTS, non_blocking=False)
    slow = function_response("id-2", "slow_x", bad, OPTS, non_blocking=True, ends_stream=True)
    assert blocking == {"id": "id-1", "name": "get_x", "response": {"output": bounded_payload(ok, OPTS)}}
    assert slow["response"] == {"error": bounded_payload(bad, OPTS)} and slow["scheduling"] == "WHEN_IDLE"
    resps = [blocking, slow, interim_response("id-2", "slow_x", "One moment.")]
    validate_live_client_message({"toolResponse": {"functionResponses": resps}})


def test_setup_validates_and_the_validator_rejects_what_the_sdk_rejects() -> None:
    msg = setup_message(
        model="models/m",
        voice="Puck",
        instructions="Be brief.",
        tools=[{"functionDeclarations": [{"name": "a", "description": "", "behavior": "NON_BLOCKING"}]}],
        opts=GeminiOptions(silence_duration_ms=600, prefix_padding_ms=100),
        handle="h-1",
        temperature=0.4,
        max_tokens=300,
    )
    validate_live_client_message(msg)
    assert msg["setup"]["model"] == "models/m" and msg["setup"]["sessionResumption"] == {"handle": "h-1"}
    assert msg["setup"]["realtimeInputConfig"]["automaticActivityDetection"]["silenceDurationMs"] == 600
    with pytest.raises(AssertionError, match=r"extra_forbidden|Extra inputs"):
        validate_live_client_message({"toolResponse": {"functionResponses": [{"id": "x", "result": {}}]}})
    with pytest.raises(AssertionError, match="exactly one top-level key"):
        validate_live_client_message({"setup": {}, "clientContent": {}})
    with pytest.raises(AssertionError, match=r"realtimeInputConfig|Extra inputs"):
        validate_live_client_message({"setup": {"model": "m", "realtimeInputConfig": {"vad": 1}}})


def test_transcript_replay_keeps_spoken_turns_only() -> None:
    h = History()
    h.add_message("system", "rules")
    h.add_message("user", "hi")
    h.add_message("assistant", "hello")
    replay = transcript_replay(h.items(), 20, family_for("gemini-live-2.5-flash-preview"))
    assert replay == {
        "clientContent": {
            "turns": [{"role": "user", "parts": [{"text": "hi"}]}, {"role": "model", "parts": [{"text": "hello"}]}],
            "turnComplete": False,
        }
    }
    validate_live_client_message(replay)
    assert transcript_replay(History().items(), 20, family_for("gemini-live-2.5-flash-preview")) is None


def test_31_transcript_replay_is_initial_history_that_ends_the_history_phase() -> None:
    h = History()
    h.add_message("user", "hi")
    replay = transcript_replay(h.items(), 20, family_for("gemini-3.1-flash-live-preview"))
    assert replay is not None and replay["clientContent"]["turnComplete"] is True
    validate_live_client_message(replay)
    setup = setup_message(model="m", voice=None, instructions="", tools=[], opts=OPTS, handle=None, history_config=True)
    assert setup["setup"]["historyConfig"] == {"initialHistoryInClientContent": True}
    validate_live_client_message(setup)
