"""Outside text made valid at the boundary (engine.bounds.json_text): lone surrogates and invalid bytes become U+FFFD,
valid text (pairs included) is left as it is, and the parsers that take JSON from outside give back valid text."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engine.bounds.json_text import (
    InvalidText,
    JsonBoundsError,
    loads_bounded,
    needs_repair,
    require_valid,
    valid_json,
    valid_text,
)
from engine.providers.textloop import ModelOutput, RawCall, valid_output
from engine.tools.validation import parse_arguments

# Any code point, lone surrogates included (what JSON's \uXXXX escapes and surrogateescape can produce).
ANY_TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()))


@given(ANY_TEXT)
def test_valid_text_always_encodes_and_keeps_what_was_valid(text: str) -> None:
    out = valid_text(text)
    out.encode("utf-8")  # never raises
    if not any(0xD800 <= ord(c) <= 0xDFFF for c in text):
        assert out is text
    assert require_valid(out) is out


@given(st.binary())
def test_bytes_are_decoded_with_replacement(raw: bytes) -> None:
    assert valid_text(raw) == raw.decode("utf-8", "replace")


def test_lone_surrogates_become_u_fffd_and_pairs_are_joined() -> None:
    assert valid_text("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    assert valid_text("\ud83d\ude00") == "\U0001f600"
    assert valid_text("x\udcff".encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")) == "x\ufffd"
    with pytest.raises(InvalidText, match="character 3"):
        require_valid("abc\ud800")


def test_valid_json_repairs_keys_and_values_at_any_depth_and_copies_nothing_valid() -> None:
    clean = {"a": [1, "b", {"c": None}], "d": 2.5}
    assert valid_json(clean) is clean
    bad = {"k": [{"\ud800": "v\udfff"}], "ok": "fine"}
    assert valid_json(bad) == {"k": [{"\ufffd": "v\ufffd"}], "ok": "fine"}
    assert bad == {"k": [{"\ud800": "v\udfff"}], "ok": "fine"}  # the input is not changed
    with pytest.raises(JsonBoundsError, match="deeper than 3 levels"):
        valid_json([[[["\ud800"]]]], max_depth=3)


def test_parsers_of_outside_json_give_back_valid_text() -> None:
    text = '{"\\ud800": "\\udfff", "pair": "\\ud83d\\ude00", "plain": "x"}'
    assert needs_repair(text) and not needs_repair('{"plain": "\\n caf\u00e9"}')
    assert loads_bounded(text, 8) == {"\ufffd": "\ufffd", "pair": "\U0001f600", "plain": "x"}
    # a tool call's arguments as a provider sends them (a JSON string), as the execution path parses them
    assert parse_arguments('{"city": "\\ud800", "\\udfff": 1}') == {"city": "\ufffd", "\ufffd": 1}
    out = ModelOutput(text="hi \ud800", calls=[RawCall("look\udfff", {"q": ["\ud800"]})])
    valid_output(out)
    assert out.text == "hi \ufffd" and out.calls[0].name == "look\ufffd" and out.calls[0].arguments == {"q": ["\ufffd"]}
    json.dumps(out.calls[0].arguments, ensure_ascii=False).encode("utf-8")
