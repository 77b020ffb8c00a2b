"""ElevenLabs Agents: config, the REST tool push (idempotent, SDK-validated), conversation start and its faults."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError
from realtime_elevenlabs_fake import AGENT_ID, API_KEY, DEFAULT_EVENTS
from realtime_elevenlabs_world import TOOLS, world

from engine.config.models import ProviderConfig
from engine.providers.base import ProviderError
from engine.providers.factory import create_provider
from engine.realtime.elevenlabs_agent import ElevenLabsAgentProvider
from engine.realtime.elevenlabs_tools import covers, response_timeout_s
from engine.realtime.session import PCM16_16K, PCMU_8K, AssistantAudio, AssistantText, ProviderNotice


def test_agent_id_is_required_for_elevenlabs_and_refused_elsewhere() -> None:
    with pytest.raises(ValidationError, match=r"agent_id: an elevenlabs_agent provider needs 'agent_id'"):
        ProviderConfig(type="elevenlabs_agent")
    with pytest.raises(ValidationError, match=r"agent_id: 'agent_id' only applies to an elevenlabs_agent"):
        ProviderConfig(type="openai_realtime", agent_id="agent_1")
    assert ProviderConfig(type="elevenlabs_agent", agent_id="agent_1").agent_id == "agent_1"


def test_helpers() -> None:
    assert covers({"a": 1, "b": {"c": [1, {"d": 2, "e": 3}]}}, {"b": {"c": [1, {"d": 2}]}})
    assert not covers({"a": 1}, {"a": 2}) and not covers({"l": [1]}, {"l": [1, 2]})
    assert response_timeout_s(None) == 15 and 1 <= response_timeout_s(None) <= 120


async def test_start_pushes_the_view_as_client_tools_then_opens_the_conversation() -> None:
    async with world() as w:
        session, live = await w.start()
        assert sorted(w.rest.linked_names()) == sorted(TOOLS)
        by_name = {c["name"]: c for c in w.rest.tools.values()}
        weather = by_name["get_weather"]
        assert weather["type"] == "client" and weather["expects_response"] is True
        assert weather["parameters"]["required"] == ["city"]
        assert weather["response_timeout_secs"] == 15  # the engine's 10 s default plus the margin
        assert by_name["slow_lookup"]["pre_tool_speech"] == "force"  # ElevenLabs' own slow-tool speech
        assert by_name["slow_lookup"]["interruption_mode"] == "allow"  # idempotent
        assert by_name["hangup_call"]["interruption_mode"] == "disable_during_tool"
        assert by_name["get_weather"]["pre_tool_speech"] == "auto"
        events = w.rest.agent["conversation_config"]["conversation"]["client_events"]
        assert events == [*DEFAULT_EVENTS, "agent_response_complete", "ping"]  # what the adapter reads, kept
        init = w.ws.initiations[0]
        override = init["conversation_config_override"]
        assert override["agent"] == {
            "prompt": {"prompt": "You are a test agent."},
            "first_message": "Hello, test desk.",
        }
        assert override["tts"] == {"voice_id": "voice-test"}
        assert init["dynamic_variables"] == {
            "call_id": session.call_id,
            "caller_name": "Ada",
            "caller_number": "+15550100",
        }
        assert live.input_spec == PCMU_8K and live.output_spec == PCMU_8K  # ulaw_8000 straight through
        assert "conversation_signature=sig" in w.ws.request_paths[0] and API_KEY not in w.ws.request_paths[0]
        await w.ws.audio(1, b"\x7f" * 160)
        await w.ws.agent_says("Hello, test desk.")
        audio = await w.until(lambda e: isinstance(e, AssistantAudio))
        assert audio == AssistantAudio(b"\x7f" * 160, "1")
        await w.until(lambda e: isinstance(e, AssistantText) and e.text == "Hello, test desk.")
        await live.send_audio(b"\x01" * 160)
        await w.ws.wait_for(lambda m: isinstance(m, dict) and "user_audio_chunk" in m)
        assert w.ws.audio_chunks == [b"\x01" * 160]
    assert w.ws.errors == [] and w.rest.errors == []
    assert all(API_KEY not in json.dumps(body) for _, _, body in w.rest.requests)


async def test_the_push_is_idempotent_and_patches_only_what_differs() -> None:
    async with world() as w:
        await w.start()
        first = w.rest.mutations()
        assert [m for m, _ in first].count("POST") == len(TOOLS) and ("PATCH", f"/v1/convai/agents/{AGENT_ID}") in first
        await w.live.aclose()
        w.rest.requests.clear()
        await w.start()  # same view: nothing to change on the agent
        assert w.rest.mutations() == []
        await w.live.aclose()
        tid = next(i for i, c in w.rest.tools.items() if c["name"] == "get_time")
        w.rest.tools[tid] = {**w.rest.tools[tid], "description": "edited in the dashboard"}
        w.rest.requests.clear()
        await w.start()
        assert w.rest.mutations() == [("PATCH", f"/v1/convai/tools/{tid}")]
        assert w.rest.tools[tid]["description"] == "Time in a zone."
    assert w.ws.errors == [] and w.rest.errors == []


async def test_agent_that_allows_no_overrides_gets_none_and_the_operator_is_told() -> None:
    async with world() as w:
        w.ws.allow = set()
        await w.start()
        assert "conversation_config_override" not in w.ws.initiations[0]
        notice = await w.until(lambda e: isinstance(e, ProviderNotice))
        assert isinstance(notice, ProviderNotice) and not notice.fatal
        assert "prompt, first_message, voice" in notice.message
    assert w.ws.errors == []


async def test_formats_come_from_the_conversation_metadata() -> None:
    async with world() as w:
        w.ws.formats = ("pcm_16000", "pcm_24000")
        _, live = await w.start()
        assert live.input_spec == PCM16_16K and str(live.output_spec) == "pcm16/24000"


async def test_an_agent_format_that_is_not_raw_audio_is_one_clear_error() -> None:
    async with world() as w:
        w.ws.formats = ("pcm_16000", "mp3_44100")
        with pytest.raises(ProviderError, match=r"output audio format 'mp3_44100' is not raw audio"):
            await w.start()


@pytest.mark.parametrize("status", [401, 403])
async def test_rest_auth_failure_is_one_clear_error_without_the_key(status: int) -> None:
    async with world() as w:
        w.rest.refuse_status = status
        with pytest.raises(ProviderError) as ei:
            await w.start()
        text = str(ei.value)
        assert ("authentication failed" if status == 401 else "access denied") in text
        assert "Invalid API key" in text and API_KEY not in text and ei.value.status == status
        assert w.engine.calls_info() == [] or all(c.state == "ended" for c in w.engine.calls_info())


async def test_socket_refusal_is_one_clear_error_without_the_signature() -> None:
    async with world() as w:
        w.ws.refuse_status = 403
        with pytest.raises(ProviderError, match=r"access denied.*HTTP 403") as ei:
            await w.start()
        assert "sig" not in str(ei.value) and API_KEY not in str(ei.value)


async def test_unknown_agent_is_named() -> None:
    async with world() as w:
        provider = w.engine.providers["el"]
        assert isinstance(provider, ElevenLabsAgentProvider)
        provider.agent_id = "agent_missing"
        with pytest.raises(ProviderError, match=r"not found \(check agent_id and base_url\).*agent not found"):
            await w.start()


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"reconect_attempts": 2}, r"providers\.el\.options: unknown \['reconect_attempts'\]"),
        ({"reconnect_attempts": -1}, r"providers\.el\.options\.reconnect_attempts: a number >= 0, not -1"),
        ({"retry_backoff_ms": "fast"}, r"providers\.el\.options\.retry_backoff_ms: a number >= 0, not 'fast'"),
    ],
)
def test_bad_options_are_named(options: dict[str, object], words: str) -> None:
    config = ProviderConfig(type="elevenlabs_agent", agent_id="a", options=options)
    with pytest.raises(ProviderError, match=words):
        create_provider("el", config)


async def test_check_connection_proves_key_and_agent_without_a_conversation() -> None:
    async with world() as w:
        provider = w.engine.providers["el"]
        assert isinstance(provider, ElevenLabsAgentProvider)
        report = await provider.check_connection()
        assert report == {
            "provider": "el",
            "type": "elevenlabs_agent",
            "agent_id": AGENT_ID,
            "agent_name": "Test agent",
            "input_format": "ulaw_8000",
            "output_format": "ulaw_8000",
            "client_tools": 0,
        }
        assert w.ws.connections == 0 and w.rest.mutations() == []
        w.rest.refuse_status = 401
        with pytest.raises(ProviderError, match="authentication failed") as ei:
            await provider.check_connection()
        assert API_KEY not in str(ei.value)


async def test_a_conversation_refused_at_start_is_one_clear_error() -> None:
    async with world() as w:
        w.ws.allow = {"prompt"}
        w.rest.claims = {"prompt", "first_message", "voice"}  # the agent says yes, the conversation says no
        with pytest.raises(ProviderError, match=r"did not start: .*1008: Override for field 'first_message'"):
            await w.start()
        assert w.ws.errors == ["overrides not allowed by the agent: ['first_message', 'voice']"]
