"""One reading of spoken numbers for every caller: the shared parser's table, and each former parser's callers."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.config.models import ProviderConfig
from engine.elicitation.answers import spoken_number
from engine.email.spoken import ParsedAddress, parse_spoken_address
from engine.providers.scripted import ScriptedProvider
from engine.servers.dice.spoken import normalize
from engine.text.spoken_numbers import digits_in_text, read_number


@pytest.mark.parametrize(
    ("phrase", "digits", "value", "used"),
    [
        ("one two three", "123", 123, 3),
        ("twenty three", "23", 23, 2),
        ("twenty-three", None, None, 0),  # hyphens are the text reader's business (digits_in_text)
        ("niner", "9", 9, 1),
        ("one niner", "19", 19, 2),
        ("oh seven", "07", 7, 2),
        ("nineteen eighty four", "1984", 1984, 3),
        ("twenty three forty five", "2345", 2345, 4),
        ("one hundred and five", "105", 105, 4),
        ("a hundred", "100", 100, 2),
        ("a thousand", "1000", 1000, 2),
        ("two thousand and five", "2005", 2005, 4),
        ("two thousand three hundred forty five", "2345", 2345, 6),
        ("nineteen hundred and ninety nine", "1999", 1999, 5),
        ("Twenty One", "21", 21, 2),
        ("seven dogs", "7", 7, 1),
        ("one hundred and dogs", "100", 100, 2),
        ("a", None, None, 0),
        ("hundred", None, None, 0),
        ("dogs", None, None, 0),
    ],
)
def test_a_phrase_reads_as_one_number(phrase: str, digits: str | None, value: int | None, used: int) -> None:
    run = read_number(phrase.split())
    if digits is None:
        assert run is None
        return
    assert run is not None
    assert (run.digits, run.value, run.used) == (digits, value, used)


def test_oh_is_a_word_when_the_caller_says_so() -> None:
    assert read_number(["oh", "seven"], oh=False) is None
    run = read_number(["x", "seven", "oh"], 1, oh=False)
    assert run is not None and (run.digits, run.used) == ("7", 1)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("roll two d six", "roll 2 d 6"),
        ("Roll Twenty-One d a hundred", "Roll 21 d 100"),
        ("someone done", "someone done"),
        ("code one two three, then four", "code 123, then 4"),
        ("squawk niner", "squawk 9"),
        ("two hundred", "200"),
        ("oh, five", "oh, 5"),
    ],
)
def test_digits_in_text(text: str, expected: str) -> None:
    assert digits_in_text(text) == expected


# Each former parser's caller, where it read a number differently from the others.


def test_elicitation_reads_digit_by_digit_and_niner() -> None:
    assert spoken_number("one two three") == 123  # was 6
    assert spoken_number("niner") == 9
    assert spoken_number("twenty three") == 23
    assert spoken_number("two point two five") == 2.25


def test_dice_hears_niner_and_digits() -> None:
    assert normalize("two d niner") == "2d9"  # was "2dniner"
    assert normalize("one two d six") == "12d6"  # was "3d6"
    assert normalize("twenty one d six") == "21d6"


def test_email_reads_numbers_like_everyone() -> None:
    parsed = parse_spoken_address("bob niner one two at example dot com")
    assert isinstance(parsed, ParsedAddress) and parsed.address == "bob912@example.com"


def test_a_script_matches_a_code_read_digit_by_digit(tmp_path: Path) -> None:
    script = tmp_path / "codes.yaml"
    script.write_text('intents:\n  - name: code\n    patterns: ["code (?P<code>\\\\d+)$"]\n    reply: "ok"\n')
    provider = ScriptedProvider("s", ProviderConfig(type="scripted", script=str(script)))
    found = provider.match("code one two three")
    assert found is not None and found[1] == {"code": "123"}  # was "1 2 3": only "1" matched, and not to the end
