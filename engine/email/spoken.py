"""Turning an e-mail address spoken to a voice agent into the address, or into a refusal saying what was heard.

Why it exists: ``request_transcript`` gets what speech-to-text made of a caller spelling an address out loud —
"J O H N dot smith at gmail com", "juliet oscar hotel november at the rate yahoo dot co dot uk", "my email is um
mary underscore jones twenty three at outlook dot com". This module rewrites the spoken vocabulary ("dot", "at", "at
the rate", "underscore", "dash"/"hyphen", "plus", number words, letters one by one, the NATO alphabet, "b as in
bravo", "double t"), drops filler ("um", "it's", "my email is"), copes with what STT produces (capitals, commas,
"J. O. H. N.", a missing "dot" before a well-known ending), then lets ``email-validator`` judge the syntax. The
result carries a read-back form ("j-o-h-n dot smith at gmail dot com") that spells what the caller spelled, so the
agent can confirm it; a refusal carries what was understood so the agent can ask again.

Number words are read as digits and joined ("one two three" → 123, "nineteen eighty four" → 1984, "two thousand and
five" → 2005); a NATO word or a letter name ("jay", "aitch") counts as a letter only next to another spelled letter,
so "mike at gmail dot com" stays mike@gmail.com. When more than one "at" was said, the last one that is followed by
something separates the name from the domain. A word followed by its spelling ("sarah s-a-r-a-h") counts once; a
caller who corrects themselves ("no sorry", "I mean") is asked again rather than guessed at. An address already
written out ("a-b@x.com", as the agent passes it back to confirm) is taken as written, and the read-back of any
address parses back to that address. The vocabulary is in ``engine.email.spoken_words``; the DNS side of validation
is ``engine.email.domain``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from email_validator import EmailNotValidError, validate_email

from engine.email.recipients import length_problem
from engine.email.spoken_words import (
    AS_IN,
    AT_PHRASES,
    CASE_WORDS,
    CORRECTIONS,
    DIGIT_WORDS,
    FILLER_WORDS,
    GLUED,
    IMPLICIT_TLDS,
    INNER_DOT,
    LEAD_WORDS,
    LETTER_NAMES,
    NATO,
    NOISE_PHRASES,
    PIECES,
    PREFIXES,
    SPLIT,
    SUFFIXES,
    SYMBOL_KEYS,
    SYMBOL_NAMES,
    SYMBOL_PHRASES,
    TAIL_WORDS,
    TENS,
    UNITS,
    VOCAB,
)
from engine.text.spoken_numbers import read_number

#: Longer input is not an address someone dictated; refusing it keeps the parser's work bounded.
MAX_SPOKEN_CHARS = 600

_Kind = Literal["letters", "word", "digits", "symbol", "maybe_letter"]


@dataclass(frozen=True, slots=True)
class ParsedAddress:
    """A syntactically valid address and the form to read back to the caller ("j-o-h-n dot smith at gmail dot com")."""

    address: str
    spelled: str

    @property
    def domain(self) -> str:
        return self.address.rsplit("@", 1)[1]


@dataclass(frozen=True, slots=True)
class AddressRefusal:
    """Why no address came out (``reason``, to be said to the caller) and what was understood, in read-back form."""

    reason: str
    understood: str


@dataclass(frozen=True, slots=True)
class _Seg:
    text: str
    kind: _Kind
    said: str = ""  # the word a maybe_letter came from ("mike"), used when it turns out to be a word


def parse_spoken_address(text: str) -> ParsedAddress | AddressRefusal:
    """The address in ``text`` (what STT heard) with its read-back form, or a refusal with what was understood."""
    if len(text) > MAX_SPOKEN_CHARS:
        return AddressRefusal(f"that was longer than {MAX_SPOKEN_CHARS} characters, too long for an email address", "")
    bare = text.strip().strip("<>\"'.,;:!?()[] ").lower()
    corrected = False
    if "@" in bare and not SPLIT.search(bare):  # written out already (the agent confirming "a-b@x.com"): as is
        segs = _literal(bare)
    else:
        tokens = _clean(_tokens(text))
        if not tokens:
            return AddressRefusal("I did not hear an email address", "")
        corrected = any(_starts(tokens, i, p) for i in range(1, len(tokens)) for p in CORRECTIONS)
        segs = _drop_echoes(_resolve_letters(_segments(tokens, _at_position(tokens))))
    ats = [i for i, s in enumerate(segs) if s.kind == "symbol" and s.text == "@"]
    if len(ats) == 1:
        segs = _insert_missing_dot(segs, ats[0])
    understood = _read_back(segs, exact=False)
    address = "".join(s.text for s in segs)
    if corrected:  # "john at gmail dot com, no sorry, yahoo": which part counts is a guess; ask again
        return AddressRefusal("the caller corrected themselves midway; ask for the whole address once more", understood)
    if not ats:
        return AddressRefusal("I did not hear 'at', so I cannot tell the name from the domain", understood)
    if len(ats) > 1:
        return AddressRefusal("I heard 'at' more than once", understood)
    local, domain = address.split("@")
    if not local:
        return AddressRefusal("I did not hear a name before the 'at'", understood)
    if not domain:
        return AddressRefusal("I did not hear a domain after the 'at'", understood)
    if "." not in domain:
        return AddressRefusal("the domain after the 'at' has no ending such as 'dot com'", understood)
    if len(domain.rsplit(".", 1)[1]) == 1:  # "gmail dot c": no ending is one letter long, the rest got lost
        return AddressRefusal(f"the ending '.{domain.rsplit('.', 1)[1]}' is too short", understood)
    too_long = length_problem(address)  # in octets, as RFC 5321 counts (email-validator lets a long local part by)
    if too_long is not None:
        return AddressRefusal(too_long, understood)
    try:
        valid = validate_email(address, check_deliverability=False)
    except EmailNotValidError as e:
        reason = str(e).replace("the @-sign", "the 'at'").replace("@-sign", "'at'")
        return AddressRefusal(reason.removeprefix("The email address is not valid. ").rstrip("."), understood)
    return ParsedAddress(valid.normalized, _read_back(segs))


def _tokens(text: str) -> list[str]:
    """Lower-case words with STT punctuation dealt with: commas gone, "J." → "j", "j-o-h-n" → letters, "@" apart."""
    text = text.replace("\u2019", "'").replace("\u2018", "'").lower()
    text = GLUED.sub(r"dot \1", text.replace("e-mail", "email").replace("x-ray", "xray")).replace("@", " @ ")
    text = INNER_DOT.sub(" . ", text)  # "j-o-h-n.smith" → "j-o-h-n . smith"; a dot before a space is punctuation
    out: list[str] = []
    for raw in SPLIT.split(text):
        tok = raw.strip("'").rstrip(".")
        if not tok:
            if raw.strip("'") == ".":
                out.append(".")
            continue
        parts = tok.split("-")
        if len(parts) > 1 and all(p in UNITS or p in TENS or p == "double" or len(p) == 1 for p in parts):
            out.extend(parts)  # "j-o-h-n", "twenty-three", "double-t"
        else:
            out.append(tok)
    return out


def _starts(tokens: list[str], i: int, phrase: tuple[str, ...]) -> bool:
    return tuple(tokens[i : i + len(phrase)]) == phrase


def _clean(tokens: list[str]) -> list[str]:
    """Drop filler anywhere ("um", "all one word", "capital" before a letter), lead-ins and sign-offs."""
    kept: list[str] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        noise = next((p for p in NOISE_PHRASES if _starts(tokens, i, p)), None)
        case = next((p for p in CASE_WORDS if _starts(tokens, i, p)), None)
        nxt = tokens[i + len(case)] if case and i + len(case) < len(tokens) else ""
        if tok in FILLER_WORDS:
            i += 1
        elif noise:
            i += len(noise)
        elif case == ("number",) and (nxt in UNITS or nxt in TENS or nxt.isdigit()):
            i += 1
        elif case and case != ("number",) and (len(nxt) == 1 or nxt in NATO or nxt in LETTER_NAMES):
            i += len(case)
        elif tok == "at" and kept and kept[-1] == "at":  # a stutter: "at at"
            i += 1
        else:
            kept.append(tok)
            i += 1
    changed = True
    while changed and kept:
        changed = False
        lead = next((p for p in PREFIXES if _starts(kept, 0, p) and len(p) < len(kept)), None)
        tail = next((p for p in SUFFIXES if len(p) < len(kept) and tuple(kept[-len(p) :]) == p), None)
        if lead:
            del kept[: len(lead)]
            changed = True
        if tail:
            del kept[-len(tail) :]
            changed = True
    return kept


def _at_position(tokens: list[str]) -> int:
    """Index of the "at" that splits name and domain: every "@" if STT wrote one, else the last "at" with a tail."""
    if "@" in tokens:
        return -1
    spots = [i for i in range(len(tokens)) if any(_starts(tokens, i, p) for p in AT_PHRASES)]
    with_tail = [i for i in spots if i < len(tokens) - 1]
    return (with_tail or spots or [-1])[-1]


def _letter(tok: str) -> str:
    """The letter a spelled token stands for ("j", "juliet", "jay" → "j"), or ""."""
    if len(tok) == 1 and tok.isalpha():
        return tok
    return NATO.get(tok) or LETTER_NAMES.get(tok, "")


def _segments(tokens: list[str], at: int) -> list[_Seg]:
    """One pass over the tokens: symbols, "@", numbers, letters (certain or maybe), and everything else literally."""
    segs: list[_Seg] = []
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if i == at:
            i += next(len(p) for p in AT_PHRASES if _starts(tokens, i, p))
            segs.append(_Seg("@", "symbol"))
            continue
        symbol = next((p for p in SYMBOL_KEYS if _starts(tokens, i, p)), None)
        if symbol:
            segs.append(_Seg(SYMBOL_PHRASES[symbol], "symbol"))
            i += len(symbol)
            continue
        if tok in ("double", "triple") and i + 1 < len(tokens):
            nxt, times = tokens[i + 1], 2 if tok == "double" else 3
            if nxt in ("u", "you"):  # "double u" is the letter w
                segs.append(_Seg("w", "letters"))
                i += 2
                continue
            after = tokens[i + 2] if i + 2 < len(tokens) else ""
            if nxt == "oh" and (after in UNITS or after in TENS or after.isdigit()):  # "double oh seven"
                segs.append(_Seg("0" * times, "digits"))
                i += 2
                continue
            if (nxt in UNITS and UNITS[nxt] < 10) or (nxt.isdigit() and len(nxt) == 1):
                segs.append(_Seg(str(UNITS.get(nxt, nxt)) * times, "digits"))
                i += 2
                continue
            if _letter(nxt):
                segs.extend([_Seg(_letter(nxt), "letters")] * times)
                i += 2
                continue
        run = read_number(tokens, i, oh=False)
        if run:
            segs.append(_Seg(run.digits, "digits"))
            i += run.used
            continue
        letter = _letter(tok)
        if letter:
            as_in = next((p for p in AS_IN if _starts(tokens, i + 1, p)), None)
            k = i + 1 + len(as_in) if as_in else 0
            if as_in and k < len(tokens) and tokens[k][:1] == letter:  # "b as in bravo", "s for sugar"
                segs.append(_Seg(letter, "letters"))
                i = k + 1
                continue
            segs.append(_Seg(letter, "letters") if len(tok) == 1 else _Seg(letter, "maybe_letter", tok))
            i += 1
            continue
        segs.extend(_literal(tok))
        i += 1
    return segs


def _literal(tok: str) -> list[_Seg]:
    """A token taken as written ("smith", "gmail.com", "o'brien", "j23"), cut into words, digits and symbols."""
    out = []
    for piece in PIECES.findall(tok):
        if piece in SYMBOL_NAMES:
            out.append(_Seg(piece, "symbol"))
        else:
            out.append(_Seg(piece, "digits" if piece.isdigit() else "word"))
    return out


def _resolve_letters(segs: list[_Seg]) -> list[_Seg]:
    """A NATO word or letter name is a letter next to another spelled letter ("mike echo"), else a word ("mike");
    once the caller has spelled with the NATO alphabet, a NATO word alone is a letter too ("papa dot mike");
    "oh" next to digits is a zero ("double seven oh one")."""

    def near(i: int) -> list[_Kind]:
        return [segs[j].kind for j in (i - 1, i + 1) if 0 <= j < len(segs)]

    spelled = [i for i, s in enumerate(segs) if s.kind == "maybe_letter" and {"letters", "maybe_letter"} & {*near(i)}]
    nato_style = any(segs[i].said in NATO for i in spelled)
    out = []
    for i, seg in enumerate(segs):
        if seg.kind != "maybe_letter":
            out.append(seg)
        elif seg.said == "oh" and "digits" in near(i):
            out.append(_Seg("0", "digits"))
        elif i in spelled or (nato_style and seg.said in NATO):
            out.append(_Seg(seg.text, "letters"))
        else:
            out.append(_Seg(seg.said, "word"))
    return out


def _drop_echoes(segs: list[_Seg]) -> list[_Seg]:
    """ "sarah s-a-r-a-h" (a word, then its spelling) or the other way round is one "sarah", kept as spelled."""
    out = list(segs)
    i = 0
    while i < len(out):
        j = i
        while j < len(out) and out[j].kind == "letters":
            j += 1
        spelled = "".join(s.text for s in out[i:j])
        if j - i > 1 and i > 0 and out[i - 1].kind == "word" and out[i - 1].text == spelled:
            del out[i - 1]
            j -= 1
        elif j - i > 1 and j < len(out) and out[j].kind == "word" and out[j].text == spelled:
            del out[j]
        i = max(j, i + 1)
    return out


def _insert_missing_dot(segs: list[_Seg], at: int) -> list[_Seg]:
    """ "gmail com" → "gmail.com", "bbc co uk" → "bbc.co.uk": only when the domain has no dot at all."""
    domain = segs[at + 1 :]
    if any(s.kind == "symbol" and s.text == "." for s in domain):
        return segs
    first_tld = len(domain)
    while first_tld > 1 and domain[first_tld - 1].kind == "word" and domain[first_tld - 1].text in IMPLICIT_TLDS:
        first_tld -= 1
    if first_tld == len(domain) or domain[first_tld - 1].kind == "symbol":
        return segs
    rebuilt = list(domain[:first_tld])
    for seg in domain[first_tld:]:
        rebuilt += [_Seg(".", "symbol"), seg]
    return segs[: at + 1] + rebuilt


def _read_back(segs: list[_Seg], exact: bool = True) -> str:
    """Spelled letters hyphenated ("j-o-h-n"), digits one by one in words, symbols by name, words as they are.
    ``exact``: a word this parser would reinterpret is spelled ("dot@x.com" is d-o-t at x dot com), so the read-back
    parses to the same address; what a refusal understood needs no such care."""
    pieces: list[str] = []
    previous: _Kind | None = None
    for i, seg in enumerate(segs):
        edge = (i == 0 and seg.text in LEAD_WORDS) or (i == len(segs) - 1 and seg.text in TAIL_WORDS)
        if exact and seg.kind == "word" and (seg.text in VOCAB or edge or GLUED.fullmatch(seg.text)):
            for letter in seg.text:
                pieces.append(f"{pieces.pop()}-{letter}" if previous == "letters" else letter)
                previous = "letters"
            continue
        if seg.kind == "letters" and previous == "letters":
            pieces[-1] += "-" + seg.text
        elif seg.kind == "word" and previous == "word":  # "john smith" became johnsmith: say it that way
            pieces[-1] += seg.text
        elif seg.kind in ("letters", "word"):
            pieces.append(seg.text)
        elif seg.kind == "digits":
            pieces.append(" ".join(DIGIT_WORDS[int(d)] if d.isascii() else d for d in seg.text))
        else:
            pieces.append(SYMBOL_NAMES.get(seg.text, seg.text))
        previous = seg.kind
    return " ".join(pieces)
