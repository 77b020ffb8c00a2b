"""Dice server: parser and roller units (seeded) and the server run as a child process over stdio."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import CallToolResult

from engine.config.models import TiersConfig
from engine.servers.dice.notation import DiceError, Limits, parse
from engine.servers.dice.roller import roll, speak
from engine.servers.dice.spoken import normalize
from engine.servers.dice.tables import TableError, load_tables


@pytest.mark.parametrize(
    ("text", "notation"),
    [
        ("2d6", "2d6"),
        ("d20", "1d20"),
        ("2d6+1d4-2", "2d6+1d4-2"),
        ("4d6kh3", "4d6kh3"),
        ("2d20kl1", "2d20kl1"),
        ("4d6dl1", "4d6dl1"),
        ("4d6dh1", "4d6dh1"),
        ("4d6k3", "4d6kh3"),
        ("3d6!", "3d6!"),
        ("d%", "d%"),
        ("2d%", "2d%"),
        ("4dF", "4dF"),
        (" 2 D 6 + 3 ", "2d6+3"),
        ("-1+d8", "-1+1d8"),
    ],
)
def test_parse_valid(text: str, notation: str) -> None:
    assert parse(text).notation == notation


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "the dice expression is empty"),
        ("2d", "expected the number of sides after 'd' at the end"),
        ("0d6", "the number of dice must be at least 1"),
        ("101d6", "101 dice is over the limit of 100 dice per term"),
        ("2d1001", "d1001 is over the limit of 1000 sides"),
        ("d1", "a die needs at least 2 sides"),
        ("2d6+", "expected a number or a die like d6 at the end"),
        ("2x6", "unexpected 'x' at position 2"),
        ("2d6*3", r"unexpected '\*' at position 4"),
        ("4d6kh5", "cannot keep 5 of 4 dice"),
        ("4d6dl4", "cannot drop 4 of 4 dice"),
        ("4d6kh", "expected how many dice to keep"),
        ("3dF!", "Fudge dice .dF. cannot explode"),
        ("3d6!!", "'!' given twice"),
        ("4d6kh1kl1", "only one keep or drop modifier"),
        ("+".join(["1d4"] * 11), "too many terms: the limit is 10 terms"),
        ("5+3", "there are no dice"),
        ("1d6+" + "1" * 100, "the limit is 100"),
        ("2d6 3", "expected \\+ or - at position 5"),
    ],
)
def test_parse_invalid(text: str, message: str) -> None:
    with pytest.raises(DiceError, match=message):
        parse(text)


def test_roll_keep_drop_and_totals_are_consistent() -> None:
    rng = random.Random(1234)
    for _ in range(200):
        result = roll(parse("4d6kh3+2d20kl1+4d6dl1-2"), rng)
        kh, kl, dl = result.terms[0], result.terms[1], result.terms[2]
        assert sum(d.kept for d in kh.dice) == 3
        assert min(d.value for d in kh.dice if d.kept) >= max(d.value for d in kh.dice if not d.kept)
        assert [d.kept for d in kl.dice].count(True) == 1
        assert next(d.value for d in kl.dice if d.kept) == min(d.value for d in kl.dice)
        assert sum(not d.kept for d in dl.dice) == 1
        assert result.total == sum(t.subtotal for t in result.terms)
        assert result.total == kh.subtotal + kl.subtotal + dl.subtotal - 2


def test_exploding_fudge_and_percent_ranges() -> None:
    rng = random.Random(99)
    exploded = 0
    for _ in range(300):
        result = roll(parse("3d6!"), rng)
        dice = result.terms[0].dice
        originals = [d for d in dice if not d.from_explosion]
        assert len(originals) == 3
        # Every extra die follows a six.
        for before, after in itertools.pairwise(dice):
            if after.from_explosion:
                assert before.value == 6
        exploded += len(dice) - 3
        fudge = roll(parse("4dF"), rng).terms[0]
        assert all(d.value in (-1, 0, 1) for d in fudge.dice)
        percent = roll(parse("d%"), rng).total
        assert 1 <= percent <= 100
    assert exploded > 0


def test_explosion_limit_caps_chains() -> None:
    class AlwaysMax(random.Random):
        def randint(self, a: int, b: int) -> int:
            return b

    result = roll(parse("1d6!"), AlwaysMax(), Limits(max_explosions=5))
    assert len(result.terms[0].dice) == 6 and result.terms[0].explosion_capped
    assert "explosions stopped at the limit" in speak(result)


def test_speech_and_seed_reproducibility() -> None:
    first = roll(parse("2d6"), random.Random(7))
    again = roll(parse("2d6"), random.Random(7))
    assert first.as_dict() == again.as_dict()
    a, b = (d.value for d in first.terms[0].dice)
    assert speak(first) == f"You rolled 2d6: {a} and {b}, total {a + b}."
    dropped = roll(parse("4d6kh3"), random.Random(3))
    assert ", dropped " in speak(dropped)
    multi = speak(roll(parse("2d6+1d4-2"), random.Random(5)))
    assert multi.startswith("You rolled 2d6+1d4-2: 2d6 gave ") and "; minus 2; total " in multi
    assert speak(roll(parse("1d20"), random.Random(5))).count("total") == 0
    fudge = speak(roll(parse("4dF"), random.Random(5)))
    assert any(word in fudge for word in ("plus", "minus", "blank"))


@pytest.mark.parametrize(
    ("spoken", "notation"),
    [
        ("two d six", "2d6"),
        ("2 d 6", "2d6"),
        ("roll a d twenty", "d20"),
        ("three d six plus two", "3d6+2"),
        ("four d six keep highest three", "4d6kh3"),
        ("one d twenty minus one", "1d20-1"),
        ("twenty one d four", "21d4"),
        ("d percent", "d%"),
        ("four d fudge", "4dF"),
        ("2d6+1", "2d6+1"),
        # a die said without its size has six sides; "with N sides" names it
        ("roll two dice", "2d6"),
        ("roll a die", "d6"),
        ("2 dice", "2d6"),
        ("two dice plus three", "2d6+3"),
        ("roll two dice with six sides", "2d6"),
        ("three dice with twenty sides minus one", "3d20-1"),
        ("a die with one hundred sides", "d100"),
        ("two dice twenty", "2d20"),
        ("two dice percent", "2d%"),
        ("four dice fudge", "4dF"),
        ("roll a twenty sided die", "d20"),
        ("two twenty-sided dice plus one", "2d20+1"),
        ("three six sided dice", "3d6"),
    ],
)
def test_spoken_forms(spoken: str, notation: str) -> None:
    assert normalize(spoken) == notation


def test_a_spoken_die_without_sides_rolls_but_typed_notation_without_sides_is_refused() -> None:
    assert parse(normalize("roll two dice")).notation == "2d6"
    with pytest.raises(DiceError, match="number of sides after 'd'"):
        parse(normalize("2d"))
    with pytest.raises(DiceError, match="number of sides after 'd'"):
        parse(normalize("two d"))  # "d" is the letter, not the word: its size must be said


def test_tables_file_validation(tmp_path: Path) -> None:
    good = tmp_path / "t.yaml"
    good.write_text("tables:\n  Coins:\n    entries: [heads, {text: tails, weight: 3}]\n")
    table = load_tables(good)["coins"]
    assert table.sides == 4
    rolled = {table.roll(random.Random(seed))[1].text for seed in range(30)}
    assert rolled == {"heads", "tails"}
    cases = {
        "tables: [1, 2]": "top-level 'tables' mapping",
        "tables:\n  x: {entries: []}": "table 'x' needs a non-empty 'entries' list",
        "tables:\n  x: {entries: [{text: a, weight: 0}]}": "table 'x', entry 1: 'weight' must be",
        "tables:\n  x: {entries: [{txt: a}]}": "unknown keys",
        "tables: [": "not valid YAML",
    }
    for body, message in cases.items():
        good.write_text(body)
        with pytest.raises(TableError, match=message):
            load_tables(good)
    with pytest.raises(TableError, match="cannot read dice tables file"):
        load_tables(tmp_path / "missing.yaml")


async def test_dice_server_over_stdio(spawn: Callable[..., Client], text: Callable[[CallToolResult], str]) -> None:
    async with spawn("dice", "--seed", "7") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"roll", "roll_table", "list_tables"}
        meta = tools["roll"].meta or {}
        assert meta["estimated_duration_ms"] == 2 and meta["max_duration_ms"] == 400
        # headroom for a loaded machine (the declared max is the call's timeout), yet inside the FAST tier
        assert 400 <= meta["max_duration_ms"] <= TiersConfig().fast
        assert meta["idempotent"] is False and meta["cacheable_seconds"] == 0
        assert (tools["list_tables"].meta or {})["idempotent"] is True

        result = await client.call_tool("roll", {"expression": "2d6"})
        assert not result.is_error
        expected = roll(parse("2d6"), random.Random(7))  # the server's first roll with seed 7
        assert result.structured_content is not None
        assert result.structured_content["total"] == expected.total
        assert text(result) == speak(expected) == result.structured_content["speech"]

        spoken = await client.call_tool("roll", {"expression": "two d six plus three"})
        assert not spoken.is_error and text(spoken).startswith("You rolled 2d6+3:")

        bad = await client.call_tool("roll", {"expression": "2d6*3"})
        assert bad.is_error and "cannot roll '2d6*3': unexpected '*' at position 4" in text(bad)
        over = await client.call_tool("roll", {"expression": "500d6"})
        assert over.is_error and "over the limit of 100 dice per term" in text(over)
        missing = await client.call_tool("roll", {})
        assert missing.is_error and "expression" in text(missing)

        table = await client.call_tool("roll_table", {"table": "Tavern Names"})
        assert not table.is_error and text(table).startswith("On the tavern names table, you rolled ")
        assert table.structured_content and table.structured_content["table"] == "tavern_names"
        unknown = await client.call_tool("roll_table", {"table": "dragons"})
        assert unknown.is_error and "there is no table called 'dragons'" in text(unknown)
        assert "weather" in text(unknown)

        listed = await client.call_tool("list_tables", {})
        names = [t["name"] for t in (listed.structured_content or {})["tables"]]
        assert {"weather", "tavern_names", "random_encounter"} <= set(names)
