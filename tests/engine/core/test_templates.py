"""Prompt templates: known placeholders filled, unknown ones kept, stray braces never raise."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engine.core.templates import prompt_values, render
from engine.sessions.session import CallSession


def test_defaults() -> None:
    s = CallSession(call_id="call-7", context="demo", provider="p")
    out = render(
        "Hi {caller_name} from {caller_number}, call {call_id} in {context_name} ({call_direction})",
        prompt_values(s),
    )
    assert out == "Hi there from unknown, call call-7 in demo (inbound)"


def test_values_and_unknown_kept() -> None:
    s = CallSession(call_id="c", context="x", provider="p", caller_name="Ada", campaign_id="spring", lead_id="L1")
    v = prompt_values(s)
    assert render("{caller_name} {campaign_id} {lead_id} {mystery}", v) == "Ada spring L1 {mystery}"


def test_stray_braces() -> None:
    for t in [
        "{",
        "}",
        "{{caller_name}}",
        "{caller_name",
        "caller_name}",
        "{ caller_name }",
        "{}",
        "{0}",
        "{a.}",
    ]:
        render(t, {"caller_name": "A"})
    assert render("{{caller_name}}", {"caller_name": "A"}) == "{A}"


def test_dotted_paths() -> None:
    assert render("{r.total} {r.dice.1} {r.nope}", {"r": {"total": 8, "dice": [3, 5]}}) == "8 5 {r.nope}"


@given(st.text(alphabet=st.sampled_from(list("{}ab_.0 caller_name")), max_size=40))
def test_never_raises(template: str) -> None:
    out = render(template, {"caller_name": "X", "a": {"b": 1}})
    assert isinstance(out, str)


@given(st.text(max_size=60))
def test_text_without_placeholders_is_unchanged(template: str) -> None:
    if "{" not in template:
        assert render(template, {"x": 1}) == template


def test_filters() -> None:
    assert render("{icao|nospace|upper}", {"icao": "l s z h"}) == "LSZH"
    assert render("{x|bogus}", {"x": "a"}) == "{x|bogus}"
    assert render("{x|title}", {"x": "grimble"}) == "Grimble"
