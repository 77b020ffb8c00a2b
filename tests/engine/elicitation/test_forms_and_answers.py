"""The requested forms the engine accepts (flat primitives only, every refusal naming the property) and a caller's
spoken answers turned into values: numbers in words and digits, yes/no, enum choices, simple dates."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from engine.elicitation import answers
from engine.elicitation.schema import FormField, SchemaError, check_content, form_fields
from engine.voice.phrases import PhraseSet

TODAY = date(2026, 11, 28)  # a Saturday


def form(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props)[:1]}


def test_flat_primitive_forms_are_read_in_order() -> None:
    fields = form_fields(form(
        guests={"type": "integer", "minimum": 1, "maximum": 12, "title": "Guests"},
        ok={"type": "boolean"},
        meal={"type": "string", "enum": ["l", "d"], "enumNames": ["lunch", "dinner"]},
        size={"type": "string", "oneOf": [{"const": "s", "title": "small"}, {"const": "b", "title": "big"}]},
        day={"type": "string", "format": "date", "description": "the day"},
    ))  # fmt: skip
    assert [(f.name, f.kind, f.required) for f in fields] == [
        ("guests", "integer", True), ("ok", "boolean", False), ("meal", "enum", False), ("size", "enum", False),
        ("day", "string", False),
    ]  # fmt: skip
    assert fields[0].maximum == 12 and fields[2].option_titles == ("lunch", "dinner")
    assert fields[3].options == ("s", "b") and fields[4].label == "the day"


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ([], "the requested schema is list, not an object schema"),
        ({"type": "array"}, "has type 'array', not 'object'"),
        (form(), "has no properties to ask for"),
        (form(a={"type": "object", "properties": {}}), "property 'a' is a nested object"),
        (form(a={"type": "array", "items": {"type": "string"}}), "property 'a' is an array"),
        (form(a={"$ref": "#/$defs/A"}), "property 'a' is a reference ($ref)"),
        (form(a={"type": "null"}), "property 'a' has type 'null'"),
        (form(a={"type": "string", "pattern": "x"}), "property 'a' (string) has keys a form cannot honour: pattern"),
        (form(a={"type": "string", "format": "ipv4"}), "property 'a': format 'ipv4' is not one of"),
        (form(a={"type": "number", "minimum": 5, "maximum": 1}), "property 'a': minimum 5 is above maximum 1"),
        (form(a={"type": "string", "enum": [1, 2]}), "property 'a': enum must be a non-empty list of strings"),
        ({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]}, "requires 'b'"),
    ],
)
def test_anything_else_is_refused_naming_the_property(schema: Any, message: str) -> None:
    with pytest.raises(SchemaError) as e:
        form_fields(schema)
    assert message in str(e.value)


def test_an_answer_is_checked_against_the_form() -> None:
    fields = form_fields(form(n={"type": "integer", "maximum": 3}, mail={"type": "string", "format": "email"}))
    assert check_content(fields, {"n": 2.0, "mail": "a@b.test"}) == {"n": 2, "mail": "a@b.test"}
    cases: list[tuple[dict[str, Any], str]] = [
        ({}, "'n' is required"),
        ({"n": 4}, "at most 3"),
        ({"n": 1.5}, "whole number"),
        ({"n": True}, "must be a number"),
        ({"n": 1, "mail": "nope"}, "valid email"),
        ({"n": 1, "x": 1}, "no field 'x'"),
    ]
    for bad, message in cases:
        with pytest.raises(SchemaError, match=message):
            check_content(fields, bad)


@pytest.mark.parametrize(
    ("text", "value"),
    [("four", 4), ("4", 4), ("make it twenty one please", 21), ("one hundred and five", 105), ("two point five", 2.5),
     ("minus three", -3), ("a dozen", None), ("two or three", None), ("", None), ("a thousand", 1000)],
)  # fmt: skip
def test_spoken_numbers(text: str, value: float | None) -> None:
    assert answers.spoken_number(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [("yes", True), ("yes please", True), ("that's right", True), ("no", False), ("no thanks", False),
     ("that's wrong", False), ("maybe", None), ("yes no", None)],
)  # fmt: skip
def test_yes_and_no(text: str, value: bool | None) -> None:
    assert answers.yes_no(text) is value


@pytest.mark.parametrize(
    ("text", "value"),
    [("today", "2026-11-28"), ("tomorrow", "2026-11-29"), ("on friday", "2026-12-04"),
     ("next week monday", "2026-12-07"), ("march fifth", "2027-03-05"), ("the twenty first of december", "2026-12-21"),
     ("2026-12-24", "2026-12-24"), ("soon", None)],
)  # fmt: skip
def test_simple_dates(text: str, value: str | None) -> None:
    found = answers.spoken_date(text, TODAY)
    assert (found.isoformat() if found else None) == value


def test_parse_keeps_to_the_field() -> None:
    guests = FormField("guests", "integer", "Guests", minimum=1, maximum=12)
    assert answers.parse(guests, "four", TODAY) == 4
    assert answers.parse(guests, "forty", TODAY) is None  # out of range
    meal = FormField("meal", "enum", "", options=("l", "d"), option_titles=("lunch", "dinner"))
    assert answers.parse(meal, "dinner please", TODAY) == "d"
    assert answers.parse(meal, "lunch or dinner", TODAY) is None
    day = FormField("day", "string", "", format="date")
    assert answers.parse(day, "tomorrow", TODAY) == "2026-11-29"
    assert answers.speakable(day, "2026-11-29") == "Sunday, November 29"
    assert answers.confirmation(guests, 4) == "I heard 4. Is that right?"
    assert answers.question("Which meal?", meal, False) == "Which meal? You can say lunch or dinner."
    assert answers.question("Booking.", guests, True) == "Booking. Guests?"


def test_expected_answers_make_a_grammar() -> None:
    guests = FormField("guests", "integer", "Guests", minimum=1, maximum=12)
    grammar = PhraseSet(answers.phrases(guests, TODAY))
    assert "four" in grammar and "make it twelve please" in grammar and "thirteen" not in grammar
    wide = FormField("n", "number", "N")
    assert "sixty" in PhraseSet(answers.phrases(wide, TODAY))
    day = FormField("day", "string", "", format="date")
    assert "on next friday" in PhraseSet(answers.phrases(day, TODAY))


def test_a_multi_select_takes_several_choices() -> None:
    (pick,) = form_fields(form(pick={"type": "array", "minItems": 1, "maxItems": 2,
                                     "items": {"anyOf": [{"const": "g", "title": "Guitar"},
                                                         {"const": "p", "title": "Piano"},
                                                         {"const": "d", "title": "Drums"}]}}))  # fmt: skip
    assert (pick.kind, pick.options, pick.max_length) == ("multi", ("g", "p", "d"), 2)
    assert check_content([pick], {"pick": ["p", "g"]}) == {"pick": ["p", "g"]}
    for bad, message in [(["x"], "'x' is not one of"), ([], "at least 1"), (["g", "p", "d"], "at most 2")]:
        with pytest.raises(SchemaError, match=message):
            check_content([pick], {"pick": bad})
    assert answers.parse(pick, "piano and guitar", TODAY) == ["g", "p"]
    assert answers.speakable(pick, ["g", "p"]) == "Guitar and Piano"
    assert "piano and drums" in PhraseSet(answers.phrases(pick, TODAY))
    (tags,) = form_fields(form(tags={"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}))
    assert tags.options == ("a", "b")
