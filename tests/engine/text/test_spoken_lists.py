"""One rule for lists said aloud, used by transfers, elicitation hints, built-in servers and resource links."""

from __future__ import annotations

from engine.text.spoken_lists import spoken_list


def test_lists_are_said_with_commas_and_the_word_before_the_last() -> None:
    assert spoken_list([]) == ""
    assert spoken_list(["sales"]) == "sales"
    assert spoken_list(["sales", "support"]) == "sales and support"
    assert spoken_list(["a", "b", "c"], "or") == "a, b or c"


def test_past_a_limit_the_rest_are_counted() -> None:
    assert spoken_list(["a", "b", "c"], most=3) == "a, b and c"
    assert spoken_list(["a", "b", "c", "d", "e"], most=3) == "a, b, c and 2 more"
