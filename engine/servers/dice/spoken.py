"""Turning spoken dice requests ("two d six plus three") into dice notation ("2d6+3").

Why it exists: speech-to-text hands the dice server words, not symbols. This module only rewrites words
it knows (numbers, read by ``engine.text.spoken_numbers``; "d"/"dee", "plus"/"minus", "percent", "fudge",
"keep/drop highest/lowest", "exploding") and leaves everything else for the parser to reject with a precise message.
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
            out.append(run.digits)
            i += run.used
            continue
        if words[i] not in _FILLER:
            out.append(_SYMBOLS.get(words[i], words[i]))
        i += 1
    return "".join(out)
