"""The vocabulary of spoken e-mail addresses: symbol words, number words, letter names, filler, and the regexes.

Why it exists: ``engine.email.spoken`` reads these tables; they live apart so the parser stays one readable pass
and a new phrasing ("at the rate of", "low line") is a one-line change here. Number words are read by
``engine.text.spoken_numbers``, the one reader every part shares, as a digit string the way people dictate them ("one
two three" → 123, "nineteen eighty four" → 1984, "two thousand and five" → 2005); "oh" stays the letter o here.
"""

from __future__ import annotations

import re

from engine.text.spoken_numbers import SCALES, TENS, UNITS

SYMBOL_NAMES = {".": "dot", "@": "at", "_": "underscore", "-": "dash", "+": "plus", "'": "apostrophe"}
DIGIT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine")
_NATO_A = "alpha alfa bravo charlie delta echo foxtrot golf hotel india juliet juliett kilo lima mike november"
_NATO_Z = "oscar papa quebec romeo sierra tango uniform victor whiskey whisky xray yankee zulu"
NATO = {w: w[0] for w in f"{_NATO_A} {_NATO_Z}".split()}
_NAMES = "aitch=h haitch=h jay=j kay=k el=l ell=l em=m en=n ess=s vee=v zed=z zee=z dee=d gee=g pee=p tee=t bee=b"
LETTER_NAMES = dict(pair.split("=", 1) for pair in f"{_NAMES} cee=c ex=x cue=q wye=y oh=o".split())


def phrases(*texts: str) -> tuple[tuple[str, ...], ...]:
    """Token tuples, longest first, so "at the rate of" wins over "at"."""
    return tuple(sorted((tuple(t.split()) for t in texts), key=len, reverse=True))


SYMBOL_PHRASES: dict[tuple[str, ...], str] = {
    **dict.fromkeys(phrases("dot", "period", "point", "full stop"), "."),
    **dict.fromkeys(phrases("underscore", "under score", "under bar", "underbar", "underline", "low line"), "_"),
    **dict.fromkeys(phrases("dash", "hyphen", "minus"), "-"),
    **dict.fromkeys(phrases("plus", "plus sign"), "+"),
    ("apostrophe",): "'",
}
SYMBOL_KEYS = tuple(sorted(SYMBOL_PHRASES, key=len, reverse=True))
AT_PHRASES = phrases("at", "at the rate", "at the rate of", "at sign", "at symbol", "@")
FILLER_WORDS = frozenset("um umm uh uhh uhm er erm ah hmm mm".split())
NOISE_PHRASES = phrases(
    "all one word",
    "no spaces",
    "no space",
    "all lowercase",
    "all lower case",
    "all small letters",
    "all small",
    "all caps",
    "all in lowercase",
    "in lowercase",
    "in small letters",
)
CASE_WORDS = phrases(
    "capital", "uppercase", "upper case", "small", "lowercase", "lower case", "big", "the letter", "letter", "number"
)
PREFIXES = phrases(
    "so",
    "okay",
    "ok",
    "well",
    "actually",
    "yes",
    "yeah",
    "yep",
    "sure",
    "right",
    "alright",
    "oh",
    "please",
    "i said",
    "it's",
    "its",
    "it is",
    "that's",
    "thats",
    "that is",
    "this is",
    "it would be",
    "it'll be",
    "it will be",
    "my email is",
    "my email address is",
    "my email's",
    "the email is",
    "the email address is",
    "email is",
    "email address is",
    "my address is",
    "the address is",
    "address is",
    "my email",
    "email address",
    "you can send it to",
    "send it to",
    "please send it to",
    "send to",
    "it goes to",
    "you can reach me at",
)
SUFFIXES = phrases(
    "please",
    "thanks",
    "thank you",
    "thank you very much",
    "that's it",
    "thats it",
    "that's all",
    "ok",
    "okay",
    "right",
    "yeah",
)
CORRECTIONS = phrases("sorry", "i mean", "no wait", "wait", "scratch that", "actually", "correction", "not")
AS_IN = phrases("as in", "for", "like")
#: Endings a caller may run into the domain without "dot" ("gmail com"); only used when the domain had no dot at all.
IMPLICIT_TLDS = frozenset("com net org edu gov io co uk us ca de fr au info biz ai dev app nl eu ch es".split())
#: Words that mean something to this parser: read back letter by letter when they are part of an address ("d-o-t").
VOCAB = frozenset(
    {w for p in (*SYMBOL_PHRASES, *AT_PHRASES, *NOISE_PHRASES, *CASE_WORDS) for w in p}
    | {w for p in CORRECTIONS for w in p}
    | {*UNITS, *TENS, *SCALES, *LETTER_NAMES, *FILLER_WORDS, "double", "triple", "and"}
)
#: Words that are dropped as a lead-in or sign-off: spelled in the read-back only where they would be dropped.
LEAD_WORDS, TAIL_WORDS = frozenset(p[0] for p in PREFIXES), frozenset(p[-1] for p in SUFFIXES)
GLUED = re.compile(r"\bdot-?(com|net|org|co|uk|io)\b")
INNER_DOT = re.compile(r"\.(?=\w)")
SPLIT = re.compile(r"[\s,;:!?\"()\[\]{}<>]+")
PIECES = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*|\d+|[._+\-@']|.", re.UNICODE)
