"""The one parser of numbers said as words: "twenty three" → 23, "one two three" → "123", "niner" → 9.

Why it exists: speech-to-text hands dice requests, scripts, spelled e-mail addresses and form answers number words,
and they must all read them alike. A run of number words is read as the cardinal numbers said one after another
("nineteen eighty four" is 19 then 84; "one two three" is 1, 2, 3): ``NumberRun.digits`` joins them as a digit
string (codes, years, addresses: "1984", "123", and "oh seven" → "07" keeps its zero), ``NumberRun.value`` is that
string as a number. A single cardinal is its value ("one hundred and five" → 105, "a thousand" → 1000,
"two thousand and five" → 2005). "niner" (radio) is always 9. "oh" is 0 unless the caller says it is not (an e-mail
address spells the letter o with it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_UNIT_WORDS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
UNITS: dict[str, int] = {w: n for n, w in enumerate(f"{_UNIT_WORDS}seventeen eighteen nineteen".split())}
UNITS["niner"] = 9
TENS: dict[str, int] = {
    w: 10 * (n + 2) for n, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())
}
SCALES: dict[str, int] = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
#: Every word this parser reads as (part of) a number, "oh", "a"/"an" (before a scale) and "and" (after one) aside.
NUMBER_WORDS = frozenset({*UNITS, *TENS, *SCALES})
_ONE = ("a", "an")
_WORD = re.compile(r"[A-Za-z]+")
_JOIN = re.compile(r"[\s-]+")


@dataclass(frozen=True)
class NumberRun:
    """Number words read from a token list: the cardinals said in a row, and how many tokens they took."""

    groups: tuple[int, ...]
    used: int

    @property
    def digits(self) -> str:
        """The run read digit by digit: "one two three" → "123", "nineteen eighty four" → "1984", "oh seven" → "07"."""
        return "".join(str(g) for g in self.groups)

    @property
    def value(self) -> int:
        """The run as a number: a single cardinal's value ("twenty three" → 23), else its digits' (→ 123, never 6)."""
        return int(self.digits)


def _unit(word: str, oh: bool) -> int | None:
    if word == "oh":
        return 0 if oh else None
    return UNITS.get(word)


def _cardinal(tokens: Sequence[str], i: int, oh: bool) -> tuple[int, int]:
    """One cardinal number from ``tokens[i]``: (value, tokens used); used is 0 when none starts there."""
    total, current, last, j = 0, 0, "", i
    while j < len(tokens):
        w = tokens[j].lower()
        unit, after = _unit(w, oh), tokens[j + 1].lower() if j + 1 < len(tokens) else ""
        if unit is not None and (last in ("", "scale") or (last == "tens" and 0 < unit < 10)):
            current, last = current + unit, "teen" if unit >= 10 else "unit"
        elif w in TENS and last in ("", "scale"):
            current, last = current + TENS[w], "tens"
        elif w in _ONE and last == "" and after in SCALES:
            current, last = 1, "unit"
        elif w == "hundred" and last in ("unit", "teen", "tens") and 0 < current < 100:
            current, last = current * 100, "scale"
        elif w in SCALES and w != "hundred" and last in ("unit", "teen", "tens", "scale") and 0 < current < 1000:
            total, current, last = total + current * SCALES[w], 0, "scale"
        elif w == "and" and last == "scale" and (_unit(after, oh) is not None or after in TENS):
            pass
        else:
            break
        j += 1
    return total + current, j - i


def read_number(tokens: Sequence[str], i: int = 0, *, oh: bool = True) -> NumberRun | None:
    """The number words from ``tokens[i]`` (any case), or None when ``tokens[i]`` starts none.

    ``oh=False`` keeps "oh" a word (an e-mail address spells the letter o with it)."""
    groups: list[int] = []
    j = i
    while j < len(tokens):
        value, used = _cardinal(tokens, j, oh)
        if not used:
            break
        groups.append(value)
        j += used
    return NumberRun(tuple(groups), j - i) if groups else None


def digits_in_text(text: str, *, oh: bool = False) -> str:
    """``text`` with each run of number words (apart by spaces or hyphens) written as its digits, the rest as it is:
    'roll two d six' → 'roll 2 d 6', 'Twenty-One' → '21', 'one two three' → '123'."""
    words = list(_WORD.finditer(text))
    out: list[str] = []
    pos = k = 0
    while k < len(words):
        end = k + 1  # the words from k that only spaces or hyphens keep apart
        while end < len(words) and _JOIN.fullmatch(text[words[end - 1].end() : words[end].start()]):
            end += 1
        run = read_number([m.group() for m in words[k:end]], oh=oh)
        if run is None:
            k += 1
            continue
        out.append(text[pos : words[k].start()] + run.digits)
        pos = words[k + run.used - 1].end()
        k += run.used
    return "".join(out) + text[pos:]
