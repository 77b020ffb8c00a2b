"""Turning spoken dice requests ("two d six plus three") into dice notation ("2d6+3").

Why it exists: speech-to-text hands the dice server words, not symbols. This module only rewrites words
it knows (numbers, read by ``engine.text.spoken_numbers``; "d"/"dee", "plus"/"minus", "percent", "fudge",
"keep/drop highest/lowest", "exploding") and leaves everything else for the parser to reject with a precise message.
A die said without its size is a six-sided one, as people mean it ("roll two dice" is 2d6, "roll a die" d6);
"dice with twenty sides" and "twenty sided dice" are d20; a typed "2d" stays an error (notation is passed on as it is).
"""

from __future__ import annotations

import re

from engine.text.spoken_numbers import read_number

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
#: The words that name a die (their size, if said, comes after them) and what may follow as its size.
_DIE_WORDS = frozenset({"die", "dice"})
_SIZE_WORDS = frozenset({"percent", "percentile", "fudge"})


def normalize(text: str) -> str:
    """Rewrite known spoken words into notation; text that is already notation passes through."""
    lowered = text.strip().lower()
    if not re.search(r"[a-z]{2,}", lowered.replace("kh", "").replace("kl", "").replace("dh", "").replace("dl", "")):
        return "".join(text.split())
    for pattern, replacement in _PHRASES:
        lowered = pattern.sub(replacement, lowered)
    words = [w for w in re.split(r"[\s\-]+", lowered) if w]
    out: list[str] = []
    i = 0
    while i < len(words):
        run = read_number(words, i, oh=False)  # "two d six", "twenty one", "niner"
        if run is not None:
            after = i + run.used
            if words[after : after + 1] == ["sided"] and after + 1 < len(words) and words[after + 1] in _DIE_WORDS:
                # "two twenty sided dice": the last number is the size, any before it the count
                out.append("".join(map(str, run.groups[:-1])) + f"d{run.groups[-1]}")
                i = after + 2
                continue
            out.append(run.digits)
            i = after
            continue
        if words[i] in _DIE_WORDS:
            die, used = _die(words, i)
            out.append(die)
            i += used
            continue
        if words[i] not in _FILLER:
            out.append(_SYMBOLS.get(words[i], words[i]))
        i += 1
    return "".join(out)


def _die(words: list[str], i: int) -> tuple[str, int]:
    """The die named at ``words[i]`` ("die", "dice") as notation, and the words it took: "d" when its size follows
    ("dice six", "die percent"), "d20" for "dice with twenty sides", else "d6" (a die said without a size)."""
    after = i + 1
    if after < len(words) and words[after] == "with":
        run = read_number(words, after + 1, oh=False)
        if run is not None and words[after + 1 + run.used : after + 2 + run.used] in (["sides"], ["side"]):
            return f"d{run.digits}", run.used + 3
    if after < len(words) and (words[after] in _SIZE_WORDS or read_number(words, after, oh=False) is not None):
        return "d", 1
    return "d6", 1
