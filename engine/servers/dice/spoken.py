"""Turning spoken dice requests ("two d six plus three") into dice notation ("2d6+3").

Why it exists: speech-to-text hands the dice server words, not symbols. This module only rewrites words
it knows (numbers, "d"/"dee", "plus"/"minus", "percent", "fudge", "keep/drop highest/lowest",
"exploding") and leaves everything else for the parser to reject with a precise message.
"""

from __future__ import annotations

import re

_UNITS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "thirteen": 13,
    "fourteen": 14,
    "fifteen": 15,
    "sixteen": 16,
    "seventeen": 17,
    "eighteen": 18,
    "nineteen": 19,
}
_TENS = {"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_SYMBOLS = {
    "d": "d",
    "dee": "d",
    "die": "d",
    "dice": "d",
    "plus": "+",
    "minus": "-",
    "percent": "%",
    "percentile": "%",
    "and": "+",
    "add": "+",
    "fudge": "F",
    "exploding": "!",
    "explode": "!",
}
_PHRASES = (
    (re.compile(r"\bkeep(?:ing)? (?:the )?highest\b"), " kh "),
    (re.compile(r"\bkeep(?:ing)? (?:the )?lowest\b"), " kl "),
    (re.compile(r"\bdrop(?:ping)? (?:the )?lowest\b"), " dl "),
    (re.compile(r"\bdrop(?:ping)? (?:the )?highest\b"), " dh "),
)
_FILLER = {"roll", "please", "a", "an", "of"}


def normalize(text: str) -> str:
    """Rewrite known spoken words into notation; text that is already notation passes through."""
    lowered = text.strip().lower()
    if not re.search(r"[a-z]{2,}", lowered.replace("kh", "").replace("kl", "").replace("dh", "").replace("dl", "")):
        return "".join(text.split())
    for pattern, replacement in _PHRASES:
        lowered = pattern.sub(replacement, lowered)
    words = re.split(r"[\s\-]+", lowered)
    out: list[str] = []
    number: int | None = None
    for word in words:
        if not word:
            continue
        if word in _UNITS or word in _TENS:
            number = (number or 0) + _UNITS.get(word, 0) + _TENS.get(word, 0)
            continue
        if word == "hundred" and number is not None:
            number *= 100
            continue
        if number is not None:
            out.append(str(number))
            number = None
        if word in _FILLER:
            continue
        out.append(_SYMBOLS.get(word, word))
    if number is not None:
        out.append(str(number))
    return "".join(out)
