"""Every provider type that needs a key (a model, an agent id) says so in the same words, naming the provider, its
type and the key: one check (``Provider.required``) instead of one per provider."""

from __future__ import annotations

import pytest

from engine.config.models import ProviderConfig
from engine.providers.base import ProviderError
from engine.providers.factory import create_provider

NEEDS_MODEL = {
    "openai_chat": "an openai_chat provider needs 'model'",
    "openai_responses": "an openai_responses provider needs 'model'",
    "anthropic": "an anthropic provider needs 'model'",
    "gemini": "a gemini provider needs 'model'",
    "ollama": "an ollama provider needs 'model'",
    "openai_realtime": "an openai_realtime provider needs 'model' (e.g. gpt-realtime)",
    "gemini_live": "a gemini_live provider needs 'model' (e.g. gemini-live-2.5-flash)",
}


@pytest.mark.parametrize("kind", sorted(NEEDS_MODEL))
def test_a_provider_without_its_model_is_refused_naming_it(kind: str) -> None:
    with pytest.raises(ProviderError) as caught:
        create_provider("p", ProviderConfig.model_validate({"type": kind}))
    assert str(caught.value).endswith(f"providers.p: {NEEDS_MODEL[kind]}")


def test_an_elevenlabs_agent_without_its_agent_id_is_refused_naming_it() -> None:
    # the config's validator refuses it first; a config built past it still meets the provider's own check
    cfg = ProviderConfig.model_construct(type="elevenlabs_agent", agent_id="", options={}, headers={})
    with pytest.raises(ProviderError) as caught:
        create_provider("p", cfg)
    assert str(caught.value).endswith("providers.p: an elevenlabs_agent provider needs 'agent_id'")
