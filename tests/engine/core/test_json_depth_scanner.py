"""One JSON-depth scanner: tool arguments (``check_text``) and every other JSON from outside (``loads_bounded``)
agree on what nests too deep, and say where."""

from __future__ import annotations

import json

import pytest

from engine.bounds.json_text import JsonBoundsError, loads_bounded, too_deep_at
from engine.tools.limits import ArgumentLimits, LimitExceeded, check_text

LIMIT = 8


@pytest.mark.parametrize(
    ("text", "at"),
    [
        ("[" * 9 + "]" * 9, 8),
        ("[" * 8 + "]" * 8, None),
        ('{"a": ' * 9 + "1" + "}" * 9, 48),
        (json.dumps({"a": "[" * 100, "b": ["{" * 100]}), None),  # brackets inside strings are text
        (json.dumps(['\\"[[[[' * 30]), None),  # escaped quotes do not end a string
        ('"' + "[" * 100, None),  # an unterminated string runs to the end: not JSON, but not deep either
        ("[" * 9, 8),  # never closed
    ],
)
def test_both_readers_use_the_one_scanner(text: str, at: int | None) -> None:
    assert too_deep_at(text, LIMIT) == at
    limits = ArgumentLimits(max_depth=LIMIT)
    if at is None:
        check_text(text, limits)
    else:
        with pytest.raises(LimitExceeded, match=f"at character {at + 1}"):
            check_text(text, limits)
    try:
        loads_bounded(text, LIMIT)
    except JsonBoundsError as e:
        assert e.too_deep is (at is not None)
    else:
        assert at is None
