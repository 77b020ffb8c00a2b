"""Exposed names (deterministic, valid, collision-safe) and result shaping (status, message, data)."""

from __future__ import annotations

import hashlib
import re

import pytest
from mcp.types import CallToolResult, EmbeddedResource, ImageContent, TextContent, TextResourceContents
from pydantic import ValidationError

from engine.config.mcp_import import normalise_server_id
from engine.config.models import McpConfig, McpServerConfig
from engine.mcp.naming import NamingError, check_config, exposed_names
from engine.mcp.results import FALLBACK_MESSAGE, SpeechOptions, speakable, to_tool_result

VALID = re.compile(r"^[a-z0-9_]{1,64}$")


def test_plain_names_and_normalisation() -> None:
    names = exposed_names("time", ["get_current_time", "Convert-Time", "weird name!!"])
    assert names == {
        "get_current_time": "mcp_time_get_current_time",
        "Convert-Time": "mcp_time_convert_time",
        "weird name!!": "mcp_time_weird_name",
    }


def test_collisions_get_a_stable_hash_and_the_normal_form_keeps_its_name() -> None:
    a = exposed_names("s", ["get-sum", "get_sum"])
    b = exposed_names("s", ["get_sum", "get-sum"])
    assert a == b
    assert a["get_sum"] == "mcp_s_get_sum"
    assert a["get-sum"] != "mcp_s_get_sum" and a["get-sum"].startswith("mcp_s_get_sum_")
    both_odd = exposed_names("s", ["Get-Sum", "get-sum"])
    assert len(set(both_odd.values())) == 2 and all(VALID.match(n) for n in both_odd.values())


def test_long_names_are_cut_with_a_hash_and_stay_unique() -> None:
    long1, long2 = "x" * 80 + "_one", "x" * 80 + "_two"
    names = exposed_names("server", [long1, long2])
    assert all(len(n) <= 64 and VALID.match(n) for n in names.values())
    assert names[long1] != names[long2]
    assert names == exposed_names("server", [long2, long1])


def test_expose_as_wins_and_a_generated_name_yields() -> None:
    names = exposed_names("s", ["a", "b"], {"a": "mcp_s_b"})
    assert names["a"] == "mcp_s_b" and names["b"] != "mcp_s_b" and VALID.match(names["b"])


def test_expose_as_claimed_twice_is_a_config_error_naming_both() -> None:
    servers = {
        "one": {"transport": "http", "url": "http://127.0.0.1:1/mcp", "tools": [{"name": "a", "expose_as": "roll"}]},
        "two": {"transport": "http", "url": "http://127.0.0.1:2/mcp", "tools": [{"name": "b", "expose_as": "roll"}]},
    }
    with pytest.raises(ValidationError) as info:
        McpConfig.model_validate({"servers": servers})
    assert "already claimed by mcp.servers.one.tools[0].expose_as" in str(info.value)
    built = McpConfig.model_construct(servers={k: McpServerConfig.model_validate(v) for k, v in servers.items()})
    with pytest.raises(NamingError) as e:  # a config built in code, past the model's check
        check_config(built)
    assert "mcp.servers.two.tools[0].expose_as" in str(e.value) and "mcp.servers.one.tools[0].expose_as" in str(e.value)


def test_server_ids_from_free_text() -> None:
    assert normalise_server_id("My Server") == "my_server"
    assert normalise_server_id("9lives") == "s_9lives"
    assert len(normalise_server_id("a" * 50)) <= 32


def _result(*content: object, structured: object = None, error: bool = False) -> CallToolResult:
    return CallToolResult(content=list(content), structured_content=structured, is_error=error)  # type: ignore[arg-type]


def test_result_message_order() -> None:
    r = _result(TextContent(type="text", text='{"temp": {"c": 21}, "speech": "Twenty-one degrees."}'))
    assert to_tool_result(r).message == FALLBACK_MESSAGE  # JSON text is not spoken
    assert to_tool_result(r).data == {"temp": {"c": 21}, "speech": "Twenty-one degrees."}
    assert to_tool_result(r, SpeechOptions(field="speech")).message == "Twenty-one degrees."
    assert to_tool_result(r, SpeechOptions(template="It is {temp.c} C.")).message == "It is 21 C."
    assert to_tool_result(r, SpeechOptions(template="{temp.f} F", field="speech")).message == "Twenty-one degrees."
    structured = _result(TextContent(type="text", text="Sunny."), structured={"w": {"sky": "sunny"}})
    assert to_tool_result(structured, SpeechOptions(field="w.sky")).message == "sunny"
    assert to_tool_result(structured).message == "Sunny."


def test_error_results_and_attachments() -> None:
    r = to_tool_result(_result(TextContent(type="text", text="No such city."), error=True))
    assert (r.status, r.message) == ("error", "No such city.")
    assert to_tool_result(_result(error=True)).message == "The tool reported an error."
    img = ImageContent(type="image", data="AAAA", mime_type="image/png")
    res = EmbeddedResource(
        type="resource", resource=TextResourceContents(uri="file:///a.txt", text="hello", mime_type="text/plain")
    )
    r = to_tool_result(_result(img, res))
    assert r.data == {
        "attachments": [
            {
                "type": "image",
                "mime_type": "image/png",
                "size_bytes": 3,
                "sha256": hashlib.sha256(b"\0\0\0").hexdigest(),
            },
            {"type": "resource", "uri": "file:///a.txt", "mime_type": "text/plain", "size_bytes": 5, "text": "hello"},
        ]
    }
    assert r.message == "1 attached document."  # summarised for speech, kept whole in data


def test_speakable_cuts_at_sentences_and_words() -> None:
    text = "First sentence here. " * 30
    out = speakable(text)
    assert len(out) <= 300 and out.endswith(".")
    assert speakable("word " * 100).endswith("…")
    assert speakable("  many\n\n spaces  ") == "many spaces"


def test_short_text_fast_paths_give_what_the_general_rules_give() -> None:
    """speakable's and to_tool_result's shortcuts for small plain text agree with the general path."""
    import json
    import random

    from engine.mcp.results import ERROR_FALLBACK, FALLBACK_MESSAGE, MAX_SPEECH_CHARS

    def reference_speakable(text: str) -> str:
        flat = re.sub(r"\s+", " ", text).strip()
        return flat if len(flat) <= MAX_SPEECH_CHARS else speakable(text)  # only short texts are compared

    rng = random.Random(7)
    alphabet = ["a", "b", " ", "  ", "\n", "\t", "\xa0", "\u2003", ".", "{", "[", "\u200b", "é"]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 40)))
        assert speakable(text) == reference_speakable(text), repr(text)
        for is_error in (False, True):
            r = to_tool_result(CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error))
            # the module's rules for one plain text block: data is the text, the message its speakable form
            stripped = text.strip()
            parsed = None
            if stripped and stripped[0] in "{[":
                try:
                    parsed = json.loads(stripped)
                except ValueError:
                    parsed = None
            if parsed is not None:
                continue  # JSON text takes the general path
            message = speakable(text) if text.strip() else ""
            fallback = ERROR_FALLBACK if is_error else FALLBACK_MESSAGE
            assert (r.status, r.message, r.data) == ("error" if is_error else "success", message or fallback, text)


def test_one_text_with_structured_content_shortcut_gives_the_general_result() -> None:
    """A text block plus its structured form (FastMCP tools with a return type) skips the general path; a speech
    field that never resolves forces that path, and both must agree on status, message and data."""
    import random

    rng = random.Random(11)
    alphabet = ["a", " ", "\n", ".", "{", "}", "[", "]", '"', ":", "1", "é"]
    general = SpeechOptions(field="zz_absent_zz")
    texts = ['{"a": 1}', "[1, 2]", "", "  ", "Sunny.", "x" * 70_000]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30))) for _ in range(1500)]
    for text in texts:
        for structured in ({"result": text}, {"a": [1, 2]}):
            for is_error in (False, True):
                r = _result(TextContent(type="text", text=text), structured=structured, error=is_error)
                fast, slow = to_tool_result(r), to_tool_result(r, general)
                assert (fast.status, fast.message, fast.data) == (slow.status, slow.message, slow.data), repr(text)
