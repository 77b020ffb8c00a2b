"""A caller's spoken answer → a form field's value, and that value as it is said back.

Why it exists: when a context lets the caller answer an MCP server's question, what comes back is a transcript
("four", "yes please", "next friday"), not JSON. This turns it into the value the field asks for — numbers
(digits or spoken words, "twenty one", "two point five", "minus three"), yes/no, an enum choice (by its value or
title), simple dates (today, tomorrow, a weekday, "march fifth", "the fifth of march", ISO digits), e-mail
addresses spelled out ("j o h n dot smith at example dot com", through ``engine.email.spoken``; read back spelled)
and free text for plain strings — or None when it cannot tell. ``confirmation`` reads one answer back (an address a
link is e-mailed to); what else is said to the caller, and the grammar the recogniser listens with, is in
``engine.elicitation.dialogue``.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

from num2words import num2words

from engine.elicitation.schema import FormField, SchemaError, check_value
from engine.text.spoken_numbers import TENS, read_number

_ZERO_WORDS = {"none": "zero", "nil": "zero"}  # numbers are read by engine.text.spoken_numbers
_FILLER = {
    "and",
    "about",
    "is",
    "it",
    "its",
    "it's",
    "i",
    "think",
    "say",
    "make",
    "that",
    "please",
    "um",
    "uh",
    "er",
    "we",
    "are",
    "there",
    "will",
    "be",
    "of",
    "us",
    "people",
    "guests",
    "the",
    "number",
}
YES = ("yes", "yeah", "yep", "correct", "right", "sure", "confirm", "affirmative", "ok", "okay", "true", "indeed")
NO = ("no", "nope", "not", "don't", "dont", "wrong", "negative", "false", "cancel", "never", "nah")
_ORDINALS = {num2words(i, to="ordinal"): i for i in range(1, 32)}
_ORDINALS.update({f"{i}{s}": i for i in range(1, 32) for s in ("st", "nd", "rd", "th")})
_MONTHS = {
    m: i + 1
    for i, m in enumerate(
        "january february march april may june july august september october november december".split()
    )
}
WEEKDAYS = {d: i for i, d in enumerate("monday tuesday wednesday thursday friday saturday sunday".split())}
#: Integer ranges up to this size are listed whole in the recogniser's grammar; wider ones get 0..this.
GRAMMAR_NUMBERS = 60


def words(text: str) -> list[str]:
    """Lower-case words without punctuation (the recogniser's own spelling)."""
    return re.findall(r"[a-z0-9']+(?:\.[0-9]+)?", text.lower().replace("-", " "))


def yes_no(text: str) -> bool | None:
    """True for a yes, False for a no, None when it is neither (or both)."""
    ws = set(words(text))
    yes, no = bool(ws & set(YES)), bool(ws & set(NO))
    if "that's" in ws and "right" in ws and not no:
        return True
    return yes if yes != no else None


def spoken_number(text: str) -> float | None:
    """The one number in ``text`` (digits or words); None when there is none or more than one."""
    ws = [_ZERO_WORDS.get(w, w) for w in words(text) if w not in _FILLER]
    found: list[float] = []
    i = 0
    while i < len(ws):
        w = ws[i]
        if re.fullmatch(r"-?\d+(?:\.\d+)?", w):
            found.append(float(w))
            i += 1
            continue
        sign = -1 if w in ("minus", "negative") and i + 1 < len(ws) else 1
        at = i + 1 if sign < 0 else i
        value, used = _word_number(ws, at)
        if used:
            found.append(sign * value)
            i = at + used
            continue
        i += 1
    return found[0] if len(found) == 1 else None


def _word_number(ws: list[str], i: int) -> tuple[float, int]:
    """A number spelled out from ``ws[i]`` ("two point five"): (value, words used); (0, 0) when none starts there."""
    run = read_number(ws, i)
    if run is None:
        return 0, 0
    value: float = run.value
    used = run.used
    if i + used + 1 < len(ws) and ws[i + used] == "point":
        fraction = read_number(ws, i + used + 1)
        if fraction is not None:
            value = float(f"{run.value}.{fraction.digits}")
            used += 1 + fraction.used
    return value, used


def spoken_date(text: str, today: date) -> date | None:
    """A simple spoken date relative to ``today``; None when there is none."""
    ws = words(text)
    iso = re.search(r"\b(\d{4})-(\d{2})-(\d{2})\b", text)
    if iso:
        try:
            return date(int(iso[1]), int(iso[2]), int(iso[3]))
        except ValueError:
            return None
    if "today" in ws:
        return today
    if "tomorrow" in ws:
        return today + timedelta(days=2 if "after" in ws else 1)
    for w in ws:
        if w in WEEKDAYS:
            ahead = (WEEKDAYS[w] - today.weekday()) % 7 or 7
            return today + timedelta(days=ahead + (7 if "week" in ws and "next" in ws else 0))
    month = next((_MONTHS[w] for w in ws if w in _MONTHS), None)
    if month is None:
        return None
    day = _day_of_month(ws)
    if day is None:
        return None
    try:
        found = date(today.year, month, day)
    except ValueError:
        return None
    return found if found >= today else date(today.year + 1, month, day)


def _day_of_month(ws: list[str]) -> int | None:
    for i, w in enumerate(ws):
        if w in _ORDINALS:
            value = _ORDINALS[w]
            if i > 0 and ws[i - 1] in TENS:  # "twenty first"
                value += TENS[ws[i - 1]]
            return value if 1 <= value <= 31 else None
        if w.isdigit() and 1 <= int(w) <= 31:
            return int(w)
    return None


def choice(f: FormField, text: str) -> str | None:
    """The enum value ``text`` names (by value or title, whole words), or None (none or several)."""
    hits = choices(f, text) or []
    return hits[0] if len(set(hits)) == 1 else None


def choices(f: FormField, text: str) -> list[str] | None:
    """Every enum value ``text`` names ("piano and drums"), in the order of the options; None when none."""
    said = f" {' '.join(words(text))} "
    hits = [
        value
        for value, title in zip(f.options, f.option_titles, strict=True)
        if any(f" {' '.join(words(n))} " in said for n in {value, title} if words(n))
    ]
    return hits or None


def parse(f: FormField, text: str, today: date) -> object | None:
    """``text`` as a value of ``f`` (checked against its bounds and format), or None when it does not fit."""
    value: object | None
    if f.kind == "boolean":
        value = yes_no(text)
    elif f.kind in ("number", "integer"):
        value = spoken_number(text)
        if value is not None and float(value).is_integer():
            value = int(value)
    elif f.kind == "enum":
        value = choice(f, text)
    elif f.kind == "multi":
        value = choices(f, text)
    elif f.format == "date":
        d = spoken_date(text, today)
        value = d.isoformat() if d is not None else None
    elif f.format == "email":
        value = spoken_address(text)
    elif f.format in ("uri", "date-time"):
        value = None  # not something a caller can spell reliably by voice
    else:
        value = text.strip() or None
    if value is None:
        return None
    try:
        return check_value(f, value)
    except SchemaError:
        return None


def spoken_address(text: str) -> str | None:
    """The e-mail address a caller spelled out ("j o h n at example dot com"), or None when none came out."""
    from engine.email.spoken import ParsedAddress, parse_spoken_address  # email-validator loads on first use

    parsed = parse_spoken_address(text)
    return parsed.address if isinstance(parsed, ParsedAddress) else None


def spelled_address(address: str) -> str:
    """``address`` as it is read back to the caller ("j-o-h-n at example dot com")."""
    from engine.email.spoken import ParsedAddress, parse_spoken_address

    parsed = parse_spoken_address(address)  # a written address is taken as written
    return parsed.spelled if isinstance(parsed, ParsedAddress) else address


def speakable(f: FormField, value: object) -> str:
    """How a value is said back to the caller (an e-mail address spelled out)."""
    if f.format == "email" and isinstance(value, str):
        return spelled_address(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if f.kind == "enum":
        return f.option_titles[f.options.index(str(value))]
    if f.kind == "multi" and isinstance(value, list):
        titles = [f.option_titles[f.options.index(v)] for v in value]
        return titles[0] if len(titles) == 1 else f"{', '.join(titles[:-1])} and {titles[-1]}"
    if f.format == "date":
        d = date.fromisoformat(str(value))
        return f"{d.strftime('%A')}, {d.strftime('%B')} {d.day}"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def said_back(f: FormField, value: object, heard: str = "") -> str:
    """``value`` as it is read back; an e-mail address is spelled the way the caller spelled it (``heard``)."""
    if f.format == "email" and heard:
        from engine.email.spoken import ParsedAddress, parse_spoken_address

        parsed = parse_spoken_address(heard)
        if isinstance(parsed, ParsedAddress) and parsed.address == value:
            return parsed.spelled
    return speakable(f, value)


def confirmation(f: FormField, value: object, heard: str = "") -> str:
    """The read-back of one answer (an address a link is e-mailed to)."""
    return f"I heard {said_back(f, value, heard)}. Is that right?"
