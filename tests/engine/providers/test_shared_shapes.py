"""What Anthropic and Gemini share (strict turns that open with the user), and the error body every JSON API uses."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from engine.config.models import ProviderConfig
from engine.providers.anthropic import AnthropicProvider
from engine.providers.base import ProviderError, Turn
from engine.providers.gemini import GeminiProvider
from engine.providers.ollama import OllamaProvider
from engine.providers.openai_chat import OpenAIChatProvider
from engine.providers.openai_responses import OpenAIResponsesProvider
from engine.providers.rendering import RenderedTools
from engine.providers.textloop import CALL_OPENED, alternating_turns
from engine.sessions.history import HistoryItem, Message, ToolCallItem, ToolResultItem
from engine.tools.view import ToolView

HISTORY: list[HistoryItem] = [
    Message("assistant", "Hello, weather desk."),
    Message("assistant", "How can I help?"),
    Message("user", "Paris?"),
    ToolCallItem("c1", "get_weather", {"city": "Paris"}, 1),
    ToolResultItem("c1", "get_weather", "success", "18 degrees"),
    Message("user", "Thanks."),
]


def _tools() -> RenderedTools:
    provider = AnthropicProvider("p", ProviderConfig(type="anthropic", model="m"))
    return provider.renderer.render(ToolView.build(("empty",), [], [], "standard"))


def test_alternating_turns_opens_with_the_user_and_merges_one_role() -> None:
    hi, r = {"text": "hi"}, {"type": "result"}
    turns = alternating_turns(
        [
            {"role": "assistant", "b": [{"n": 1}]},
            {"role": "assistant", "b": [{"n": 2}]},
            {"role": "user", "b": [{"n": 3}]},
            {"role": "user", "b": [{"n": 4}, r]},
        ],
        "b",
        hi,
        leading=lambda block: block is r,
    )
    assert turns == [
        {"role": "user", "b": [hi]},
        {"role": "assistant", "b": [{"n": 1}, {"n": 2}]},
        {"role": "user", "b": [r, {"n": 3}, {"n": 4}]},
    ]
    assert alternating_turns([], "b", hi) == []


@pytest.mark.parametrize("kind", ["anthropic", "gemini"])
def test_greeting_first_conversations_get_a_user_turn_and_strict_alternation(kind: str) -> None:
    if kind == "anthropic":
        anthropic = AnthropicProvider("p", ProviderConfig(type="anthropic", model="m"))
        turns, _ = anthropic.messages(HISTORY, _tools())
        key, assistant = "content", "assistant"
    else:
        gemini = GeminiProvider("p", ProviderConfig(type="gemini", model="m"))
        turns, _ = gemini.contents(HISTORY, _tools(), {})
        key, assistant = "parts", "model"
    roles = [t["role"] for t in turns]
    assert roles == ["user", assistant, "user", assistant, "user"]
    assert CALL_OPENED in str(turns[0][key][0])
    assert len(turns[1][key]) == 2  # the two greeting lines in one turn
    if kind == "anthropic":  # the tool result leads the user turn that also carries "Thanks."
        assert [b["type"] for b in turns[-1]["content"]] == ["tool_result", "text"]


@pytest.mark.parametrize("cls", [OpenAIChatProvider, OpenAIResponsesProvider, GeminiProvider])
def test_an_error_body_is_a_provider_error(cls: Any) -> None:
    provider = cls("p", ProviderConfig(type=cls.type, model="m"))
    with pytest.raises(ProviderError, match="quota exceeded"):
        provider.raise_embedded_error({"error": {"message": "quota exceeded", "code": 429}})
    provider.raise_embedded_error({"choices": []})
    provider.raise_embedded_error("not a dict")


@pytest.mark.parametrize(
    ("cls", "header", "value"),
    [
        (AnthropicProvider, "x-api-key", "k"),
        (GeminiProvider, "x-goog-api-key", "k"),
        (OllamaProvider, "Authorization", "Bearer k"),
        (OpenAIChatProvider, "Authorization", "Bearer k"),
        (OpenAIResponsesProvider, "Authorization", "Bearer k"),
    ],
)
def test_json_headers_carry_the_key_and_let_the_config_headers_win(cls: Any, header: str, value: str) -> None:
    def request_headers(**config: Any) -> dict[str, str]:
        provider = cls("p", ProviderConfig(type=cls.type, model="m", **config))
        turn = cast(Turn, SimpleNamespace(system_prompt="Be brief."))  # all build_request reads of a turn
        return dict(provider.build_request(turn, HISTORY, _tools(), "off", {}).headers)

    with_key = request_headers(api_key="k", headers={"X-Trace": "1"})
    assert with_key[header] == value and with_key["Content-Type"] == "application/json" and with_key["X-Trace"] == "1"
    assert header not in request_headers()
    assert request_headers(api_key="k", headers={header: "mine"})[header] == "mine"
