"""The requested forms the engine accepts (flat primitives only, every refusal naming the property) and a caller's
spoken answers turned into values: numbers in words and digits, yes/no, enum choices, simple dates."""

from __future__ import annotations

from datetime import date
from typing import Any

import pytest

from engine.elicitation import answers, dialogue
from engine.elicitation.schema import FormField, SchemaError, check_content, form_fields
from engine.voice.phrases import PhraseSet

TODAY = date(2026, 11, 28)  # a Saturday


def form(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props)[:1]}


def test_flat_primitive_forms_are_read_in_order() -> None:
    fields = form_fields(
        form(
            guests={"type": "integer", "minimum": 1, "maximum": 12, "title": "Guests"},
            ok={"type": "boolean"},
            meal={"type": "string", "enum": ["l", "d"], "enumNames": ["lunch", "dinner"]},
            size={"type": "string", "oneOf": [{"const": "s", "title": "small"}, {"const": "b", "title": "big"}]},
            day={"type": "string", "format": "date", "description": "the day"},
        )
    )
    assert [(f.name, f.kind, f.required) for f in fields] == [
        ("guests", "integer", True),
        ("ok", "boolean", False),
        ("meal", "enum", False),
        ("size", "enum", False),
        ("day", "string", False),
    ]
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
    [
        ("four", 4),
        ("4", 4),
        ("make it twenty one please", 21),
        ("one hundred and five", 105),
        ("two point five", 2.5),
        ("minus three", -3),
        ("a dozen", None),
        ("two or three", None),
        ("", None),
        ("a thousand", 1000),
    ],
)
def test_spoken_numbers(text: str, value: float | None) -> None:
    assert answers.spoken_number(text) == value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("yes", True),
        ("yes please", True),
        ("that's right", True),
        ("no", False),
        ("no thanks", False),
        ("that's wrong", False),
        ("maybe", None),
        ("yes no", None),
    ],
)
def test_yes_and_no(text: str, value: bool | None) -> None:
    assert answers.yes_no(text) is value


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("today", "2026-11-28"),
        ("tomorrow", "2026-11-29"),
        ("on friday", "2026-12-04"),
        ("next week monday", "2026-12-07"),
        ("march fifth", "2027-03-05"),
        ("the twenty first of december", "2026-12-21"),
        ("2026-12-24", "2026-12-24"),
        ("soon", None),
    ],
)
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
    assert dialogue.question("Which meal?", meal, True) == "Which meal? Meal? You can say lunch or dinner."
    assert dialogue.question("Booking.", guests, False) == "Guests? A whole number from 1 to 12."


def test_expected_answers_make_a_grammar() -> None:
    guests = FormField("guests", "integer", "Guests", minimum=1, maximum=12)
    grammar = PhraseSet(dialogue.phrases(guests))
    assert "four" in grammar and "make it twelve please" in grammar and "thirteen" not in grammar
    wide = FormField("n", "number", "N")
    assert "sixty" in PhraseSet(dialogue.phrases(wide))
    day = FormField("day", "string", "", format="date")
    assert "on next friday" in PhraseSet(dialogue.phrases(day))


def test_a_multi_select_takes_several_choices() -> None:
    (pick,) = form_fields(
        form(
            pick={
                "type": "array",
                "minItems": 1,
                "maxItems": 2,
                "items": {
                    "anyOf": [
                        {"const": "g", "title": "Guitar"},
                        {"const": "p", "title": "Piano"},
                        {"const": "d", "title": "Drums"},
                    ]
                },
            }
        )
    )
    assert (pick.kind, pick.options, pick.max_length) == ("multi", ("g", "p", "d"), 2)
    assert check_content([pick], {"pick": ["p", "g"]}) == {"pick": ["p", "g"]}
    for bad, message in [(["x"], "'x' is not one of"), ([], "at least 1"), (["g", "p", "d"], "at most 2")]:
        with pytest.raises(SchemaError, match=message):
            check_content([pick], {"pick": bad})
    assert answers.parse(pick, "piano and guitar", TODAY) == ["g", "p"]
    assert answers.speakable(pick, ["g", "p"]) == "Guitar and Piano"
    assert "piano and drums" in PhraseSet(dialogue.phrases(pick))
    (tags,) = form_fields(form(tags={"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}))
    assert tags.options == ("a", "b")


def test_each_field_is_asked_by_its_own_words_and_type() -> None:
    """server-everything's fields, as a caller hears them: the title with the description, the type's hint."""
    fields = {f.name: f for f in form_fields(EVERYTHING)}
    asked = {name: dialogue.question("", f, False) for name, f in fields.items()}
    assert (
        dialogue.question("Please provide:", fields["name"], True) == "Please provide: String: Your full, legal name?"
    )
    assert asked["check"] == "Boolean: Agree to the terms and conditions? Please say yes or no."
    assert asked["integer"] == "Your favorite integer? A whole number from 1 to 100."  # the title says no more
    assert asked["number"] == "Number in range 1-1000: Favorite number? A number from 0 to 1000."
    assert (
        asked["hero"] == "Titled Single Select Enum: Choose your favorite hero? You can say Superman or Wonder Woman."
    )
    assert asked["firstLine"] == "First line?"  # neither title nor description: the name made readable
    guests = FormField("guests", "integer", "Guests", "number of guests", minimum=1, maximum=12)
    assert dialogue.question("", guests, False) == "Number of guests? A whole number from 1 to 12."


def test_answers_are_typed_and_read_back_together() -> None:
    fields = {f.name: f for f in form_fields(EVERYTHING)}
    heard = {
        "name": "john smith",
        "check": "yes please",
        "integer": "forty two",
        "number": "two point five",
        "hero": "wonder woman",
    }
    typed = {name: answers.parse(fields[name], text, TODAY) for name, text in heard.items()}
    assert typed == {"name": "john smith", "check": True, "integer": 42, "number": 2.5, "hero": "hero-3"}
    assert isinstance(typed["integer"], int) and check_content(list(fields.values()), typed) == typed
    answered = [(fields[n], typed[n], heard[n]) for n in ("name", "integer", "hero")]
    assert (
        dialogue.read_back(answered) == "I have String: john smith; Integer: 42; Titled Single Select Enum: "
        "Wonder Woman. Is that right?"
    )
    assert dialogue.read_back(answered[:1]) == "I heard john smith. Is that right?"


@pytest.mark.parametrize(
    ("text", "kind", "refused"),
    [
        ("never mind", "string", "cancel"),
        ("cancel", "integer", "cancel"),
        ("um forget it", "string", "cancel"),
        ("no thanks", "string", "decline"),
        ("decline", "boolean", "decline"),
        ("I'd rather not", "enum", "decline"),
        ("no thanks", "boolean", None),
        ("john smith", "string", None),
        ("cancel the order", "string", None),
    ],
)
def test_a_caller_can_cancel_or_decline_by_voice(text: str, kind: Any, refused: str | None) -> None:
    assert dialogue.refusal(FormField("x", kind, "X"), text) == refused


def test_free_text_is_open_dictation() -> None:
    name = form_fields(EVERYTHING)[0]
    # no grammar at all: a yes/no one hears a name as "yes please", a grammar of refusals as "forget about it"
    assert dialogue.phrases(name) == []
    assert "never mind" in PhraseSet(dialogue.phrases(form_fields(EVERYTHING)[2]))  # refusals elsewhere
    assert "yes please" in PhraseSet(dialogue.phrases(None))  # the read-back listens for yes and no


EVERYTHING = {
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"title": "String", "type": "string", "description": "Your full, legal name"},
        "check": {"title": "Boolean", "type": "boolean", "description": "Agree to the terms and conditions"},
        "integer": {
            "title": "Integer",
            "type": "integer",
            "description": "Your favorite integer",
            "minimum": 1,
            "maximum": 100,
        },
        "number": {
            "title": "Number in range 1-1000",
            "type": "number",
            "description": "Favorite number",
            "minimum": 0,
            "maximum": 1000,
        },
        "hero": {
            "type": "string",
            "title": "Titled Single Select Enum",
            "description": "Choose your favorite hero",
            "oneOf": [{"const": "hero-1", "title": "Superman"}, {"const": "hero-3", "title": "Wonder Woman"}],
        },
        "firstLine": {"type": "string"},
    },
}
