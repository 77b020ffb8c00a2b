"""What the caller hears while a tool's form is asked by voice, and which answers the recogniser listens for.

Why it exists: ``engine.elicitation.answers`` turns a transcript into a field's value; this is the other half of
the conversation. Each field is asked by its own words — its ``title``, with its ``description`` when that says
more (servers built on pydantic title every field after its name, and the description is the human sentence), else
the property's name made readable — plus what fits its type: "Please say yes or no." for a boolean, the choices
(their titles) for an enum, the range for a number. The server's ``message`` leads the first question only. The
collected answers are read back together ("I have Meal: dinner; Day: Sunday, November 29. Is that right?"; one
answer alone: "I heard 4. Is that right?").

At any question the caller may refuse: "never mind", "cancel", "forget it" cancel it; "no thanks", "decline",
"skip it", "I'd rather not" decline it (``refusal``). On a yes/no field a "no thanks" is the answer no.

``phrases`` is the recogniser's grammar while a field is asked: the field's answers (numbers in range, choices,
yes/no) and the refusals. Free text (a name, a first line of a story) and a spelled address have no short grammar:
the list is empty and the general model listens (open dictation) — any grammar there turns a name into one of its
phrases (a yes/no one heard "john smith" as "yes please").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Literal

from engine.elicitation.answers import GRAMMAR_NUMBERS, WEEKDAYS, confirmation, said_back, words
from engine.elicitation.schema import FormField
from engine.text.spoken_lists import spoken_list

Refusal = Literal["cancel", "decline"]

#: Whole answers that cancel the question (the caller drops it), as the recogniser spells them.
CANCEL = ("cancel", "cancel that", "cancel it", "never mind", "nevermind", "forget it", "forget about it")
#: Whole answers that decline it (the caller will not give what is asked).
DECLINE = (
    "decline",
    "i decline",
    "i declined",
    "no thanks",
    "no thank you",
    "skip",
    "skip it",
    "skip that",
    "i'd rather not",
    "rather not",
    "i don't want to say",
)
#: Refusals that are also a plain "no" to a yes/no question.
_NO_ANSWERS = ("no thanks", "no thank you")
YES_NO = ["yes", "no", "yes please", "no thanks", "that's right", "that's wrong", "correct"]
_POLITE = {"please", "um", "uh", "er", "oh", "well", "just", "okay", "ok", "thanks"}


def refusal(f: FormField | None, text: str) -> Refusal | None:
    """``cancel`` or ``decline`` when ``text`` is one of the refusals as a whole; ``f`` the field asked (a yes/no
    field takes "no thanks" as its answer no), None for the read-back."""
    said = " ".join(words(text))
    core = " ".join(w for w in words(text) if w not in _POLITE) or said
    if said in CANCEL or core in CANCEL:
        return "cancel"
    if said in DECLINE or core in DECLINE:
        if f is not None and f.kind == "boolean" and said in _NO_ANSWERS:
            return None
        return "decline"
    return None


def humanised(name: str) -> str:
    """A property name made readable: ``firstLine`` → "first line", ``guest_count`` → "guest count"."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").replace("-", " ")
    return " ".join(spaced.split()).lower()


def label(f: FormField) -> str:
    """The field's short name in a read-back: its title, else its name made readable."""
    return f.title or humanised(f.name)


def what(f: FormField) -> str:
    """What the field asks for, in words: the title, with the description when it says more."""
    desc = f.description.strip().rstrip(".?!:")
    if desc and (not f.title or set(words(f.title)) <= set(words(desc))):  # "Guests", "number of guests"
        said = desc
    elif f.title and desc:
        said = f"{f.title}: {desc}"
    else:
        said = f.title or humanised(f.name)
    return said[:1].upper() + said[1:]


def _number(x: float) -> str:
    return f"{x:g}"


def _hint(f: FormField) -> str:
    if f.kind == "boolean":
        return " Please say yes or no."
    if f.kind in ("enum", "multi"):
        if len(f.options) < 2:
            return ""
        options = spoken_list(f.option_titles, "or")
        return f" You can say {options}{' (one or more)' if f.kind == 'multi' else ''}."
    if f.kind in ("number", "integer"):
        whole = "A whole number" if f.kind == "integer" else "A number"
        if f.minimum is not None and f.maximum is not None:
            return f" {whole} from {_number(f.minimum)} to {_number(f.maximum)}."
        if f.minimum is not None:
            return f" {whole} of at least {_number(f.minimum)}."
        if f.maximum is not None:
            return f" {whole} of at most {_number(f.maximum)}."
    if f.format == "email":
        return " Please spell it."
    return ""


def question(message: str, f: FormField, first: bool) -> str:
    """What the caller is asked for ``f``; the server's ``message`` leads the ``first`` question of the form."""
    ask = what(f)
    ask = ask if ask.endswith(("?", ".", "!")) else f"{ask}?"
    lead = message.strip()
    if first and lead:
        return f"{lead} {ask}{_hint(f)}"
    return f"{ask}{_hint(f)}"


def read_back(answered: Sequence[tuple[FormField, object, str]]) -> str:
    """The collected answers said back for a yes: (field, value, what was heard for it), in the form's order."""
    if len(answered) == 1:
        return confirmation(*answered[0])
    parts = [f"{label(f)}: {said_back(f, value, heard)}" for f, value, heard in answered]
    return f"I have {'; '.join(parts)}. Is that right?"


class Refused(Exception):
    """The caller refused the question by voice: ``action`` cancel or decline."""

    def __init__(self, action: str, heard: str) -> None:
        super().__init__(f"the caller said {heard!r}")
        self.action, self.heard = action, heard


def raise_if_refused(f: FormField | None, heard: str) -> None:
    """Raise ``Refused`` when ``heard`` cancels or declines the question (``f``: the field asked, None: the
    read-back)."""
    action = refusal(f, heard)
    if action is not None:
        raise Refused(action, heard)


def refusals() -> list[str]:
    """The refusals as grammar phrases (listened for at every question)."""
    return [p for p in dict.fromkeys((*CANCEL, *DECLINE)) if p != "i declined"]


def phrases(f: FormField | None) -> list[str]:
    """The answers the recogniser listens for while ``f`` is asked (None: the read-back, a yes or a no)."""
    refuse = refusals()
    if f is None or f.kind == "boolean":
        return [*YES_NO, *(p for p in refuse if p not in YES_NO)]
    if f.kind in ("number", "integer"):
        lo = int(f.minimum) if f.minimum is not None else 0
        hi = int(f.maximum) if f.maximum is not None else lo + GRAMMAR_NUMBERS
        if hi - lo > GRAMMAR_NUMBERS:
            lo, hi = max(lo, 0), max(lo, 0) + GRAMMAR_NUMBERS
        return [*(f"[make it] {n} [please]" for n in range(lo, hi + 1)), *refuse]
    if f.kind == "enum":
        return [*(f"[the] {t} [please]" for t in f.option_titles), *refuse]
    if f.kind == "multi":
        pairs = [f"{a} and {b}" for a in f.option_titles for b in f.option_titles if a != b]
        return [*f.option_titles, *pairs, *refuse]
    if f.format == "email":
        return []  # spelled letters and words: no short grammar holds them, the general model listens
    if f.format == "date":
        days = [*WEEKDAYS, "today", "tomorrow"]
        return [*(f"[on] [next] {d}" for d in days), *refuse]
    # free text: open dictation. Not even the refusals: a grammar turns speech outside it into one of its phrases
    # (measured on espeak's voice: "george washington" → "forget about it", "thomas jefferson" → "skip that")
    return []
