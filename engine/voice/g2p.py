"""Pronunciations for words the recogniser's dictionary lacks: a user dictionary file, else espeak-ng's phonemes.

pocketsphinx can only hear words its dictionary spells out in CMU ARPAbet. For anything else (names, ICAO codes,
product words) this module asks espeak-ng for its phoneme mnemonics (US English) and maps them to ARPAbet. The
mapping covers espeak's English phoneme set; a phoneme it does not know raises ``PronunciationError`` naming
the word and the phoneme, never a silent guess. User dictionaries use the CMU format: ``word PH PH PH`` per line,
``;;;`` comments, ``word(2)`` alternates.
"""

from __future__ import annotations

import re
from pathlib import Path

from engine.voice.espeak import Espeak

ARPABET = frozenset(
    "AA AE AH AO AW AY B CH D DH EH ER EY F G HH IH IY JH K L M N NG OW OY P R S SH T TH UH UW V W Y Z ZH".split()
)

# espeak-ng English phoneme mnemonics (phsource/ph_english*) -> ARPAbet
ESPEAK_TO_ARPABET: dict[str, tuple[str, ...]] = {
    # vowels and diphthongs
    "a": ("AE",),
    "aa": ("AE",),
    "a#": ("AH",),
    "a2": ("AH",),
    "A:": ("AA",),
    "A": ("AA",),
    "A#": ("AA",),
    "A@": ("AA", "R"),
    "aI": ("AY",),
    "aI@": ("AY", "ER"),
    "aI3": ("AY", "ER"),
    "aU": ("AW",),
    "aU@": ("AW", "ER"),
    "@": ("AH",),
    "@2": ("AH",),
    "@5": ("AH",),
    "@-": ("AH",),
    "@L": ("AH", "L"),
    "3": ("ER",),
    "3:": ("ER",),
    "e": ("EH",),
    "E": ("EH",),
    "E2": ("EH",),
    "E#": ("EH",),
    "E@": ("EH", "R"),
    "e@": ("EH", "R"),
    "eI": ("EY",),
    "i": ("IY",),
    "i:": ("IY",),
    "i::": ("IY",),
    "i@": ("IY", "ER"),
    "i@3": ("IY", "R"),
    "I": ("IH",),
    "I#": ("IH",),
    "I2": ("IH",),
    "I2#": ("IH",),
    "0": ("AA",),
    "0#": ("AA",),
    "O": ("AO",),
    "O2": ("AO",),
    "O:": ("AO",),
    "O@": ("AO", "R"),
    "o@": ("AO", "R"),
    "oU": ("OW",),
    "oU#": ("OW",),
    "OI": ("OY",),
    "u": ("UW",),
    "u:": ("UW",),
    "U": ("UH",),
    "U@": ("UH", "R"),
    "u@": ("UW", "ER"),
    "V": ("AH",),
    # consonants
    "p": ("P",),
    "b": ("B",),
    "t": ("T",),
    "t#": ("T",),
    "t2": ("T",),
    "d": ("D",),
    "d#": ("D",),
    "k": ("K",),
    "g": ("G",),
    "f": ("F",),
    "v": ("V",),
    "T": ("TH",),
    "D": ("DH",),
    "s": ("S",),
    "z": ("Z",),
    "z#": ("Z",),
    "S": ("SH",),
    "Z": ("ZH",),
    "h": ("HH",),
    "x": ("HH",),
    "m": ("M",),
    "n": ("N",),
    "n-": ("N",),
    "N": ("NG",),
    "l": ("L",),
    "l-": ("L",),
    "r": ("R",),
    "r-": ("R",),
    "w": ("W",),
    "j": ("Y",),
    "tS": ("CH",),
    "dZ": ("JH",),
    "?": (),
}

_STRESS = re.compile(r"^[',%=]+")
_IGNORED = re.compile(r"^[_;:|!]+$")


class PronunciationError(ValueError):
    """No pronunciation could be found or made for a word."""


def espeak_to_arpabet(word: str, tokens: list[str]) -> list[str]:
    """Map espeak phoneme tokens (as ``Espeak.phonemes`` gives them) for ``word`` to ARPAbet."""
    out: list[str] = []
    for raw in tokens:
        tok = _STRESS.sub("", raw)
        if not tok or _IGNORED.match(tok):
            continue
        mapped = ESPEAK_TO_ARPABET.get(tok)
        if mapped is None:
            raise PronunciationError(
                f"no ARPAbet mapping for espeak phoneme {raw!r} in the word {word!r}; "
                "add the word to a user dictionary (format: 'word PH PH ...')"
            )
        out.extend(mapped)
    if not out:
        raise PronunciationError(f"espeak-ng gave no phonemes for the word {word!r}")
    return out


def espeak_pronunciation(word: str, espeak: Espeak | None = None, voice: str = "en-us") -> list[str]:
    """ARPAbet for one word from espeak-ng (US English by default)."""
    if not re.fullmatch(r"[a-z][a-z']*", word):
        raise PronunciationError(f"cannot make a pronunciation for {word!r}: only lowercase letters expected")
    engine = espeak or Espeak.instance()
    words = engine.phonemes(word, voice=voice)
    tokens = [t for w in words for t in w]  # espeak may split a word (abbreviations are spelled out)
    return espeak_to_arpabet(word, tokens)


def load_user_dictionary(path: str | Path) -> dict[str, list[str]]:
    """Read a CMU-format dictionary file: ``word PH PH ...`` per line; alternates ``word(2)`` are skipped."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise PronunciationError(f"cannot read user dictionary {p}: {exc}") from exc
    out: dict[str, list[str]] = {}
    for lineno, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith(";;;") or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) < 2:
            raise PronunciationError(f"{p}:{lineno}: expected 'word PH PH ...', got {line!r}")
        word = parts[0].lower()
        if re.search(r"\(\d+\)$", word):
            continue
        phones = [re.sub(r"\d$", "", ph.upper()) for ph in parts[1:]]  # drop lexical stress digits
        bad = [ph for ph in phones if ph not in ARPABET]
        if bad:
            raise PronunciationError(f"{p}:{lineno}: unknown ARPAbet phone(s) {bad} for the word {word!r}")
        out[word] = phones
    return out
