"""The ``type: pipeline`` provider as text: it thinks through its brain, validates its voice options, and binds."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.app import Engine
from engine.config.models import ContextConfig, ProviderConfig, Settings
from engine.providers.base import ProviderError
from engine.providers.factory import create_provider
from engine.providers.pipeline import PipelineProvider, bind_pipelines, provider_phrases
from engine.voice.pipeline import resolve_voice

SCRIPT = """
greeting: "Hello from the brain."
intents:
  - name: ping
    patterns: ['\\bping\\b']
    examples: ["ping (one | two)"]
    tools: [{name: hangup_call, args: {farewell_message: "Pong and bye."}}]
fallback: "Say ping."
"""


def _settings(tmp_path: Path, **options: object) -> Settings:
    script = tmp_path / "brain.yaml"
    script.write_text(SCRIPT, encoding="utf-8")
    s = Settings()
    s.providers["brain"] = ProviderConfig(type="scripted", script=str(script))
    s.providers["voice"] = ProviderConfig(type="pipeline", brain="brain", voice="en-us+m1", options=dict(options))
    s.contexts["line"] = ContextConfig(provider="voice", tools=["hangup_call"])
    s.mcp.enabled = False
    return s


async def test_text_turns_go_through_the_brain_and_its_tools(tmp_path: Path) -> None:
    async with Engine(_settings(tmp_path, rate=200)) as engine:
        bind_pipelines(engine.providers)
        voice = engine.providers["voice"]
        assert isinstance(voice, PipelineProvider) and voice.brain is engine.providers["brain"]
        assert provider_phrases(voice) == ["ping (one | two)"]
        opts, phrases = resolve_voice(engine, "line")
        assert (opts.voice, opts.rate, phrases) == ("en-us+m1", 200, ["ping (one | two)"])
        said: list[str] = []

        async def deliver(session: object, text: str) -> None:
            said.append(text)

        session = await engine.start_call("line", deliver=deliver)
        reply = await engine.user_said(session.call_id, "ping one")
        assert reply.meta["brain"] == "brain"
        assert said == ["Hello from the brain.", "Pong and bye."]
        assert not session.active and session.end_reason == "hangup"


def test_bad_voice_options_and_bad_brains_are_clear_errors(tmp_path: Path) -> None:
    s = _settings(tmp_path, rate=5000)
    with pytest.raises(ProviderError, match=r"providers.voice.options: voice option rate=5000: must be 80..450"):
        create_provider("voice", s.providers["voice"])
    with pytest.raises(ProviderError, match=r"unknown voice option\(s\) colour"):
        create_provider("voice", ProviderConfig(type="pipeline", brain="b", options={"colour": "red"}))
    with pytest.raises(ProviderError, match="barge_in must be bool"):
        create_provider("voice", ProviderConfig(type="pipeline", brain="b", options={"barge_in": "yes"}))
    p = create_provider("voice", ProviderConfig(type="pipeline", brain="nobody"))
    assert isinstance(p, PipelineProvider)
    with pytest.raises(ProviderError, match="not bound to its brain 'nobody'"):
        p.open_session(None)  # type: ignore[arg-type]
    with pytest.raises(ProviderError, match="brain 'nobody' is not another provider"):
        p.bind({"voice": p})
    other = create_provider("other", ProviderConfig(type="pipeline", brain="voice"))
    with pytest.raises(ProviderError, match="is itself a pipeline"):
        other.bind({"voice": p, "other": other})  # type: ignore[attr-defined]
