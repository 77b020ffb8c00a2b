"""The spoken-address corpus: what callers say (as STT writes it) → the address and its read-back, or a refusal
that says why and what was understood, so the agent can ask again."""

from __future__ import annotations

import random
import string

import pytest
from email_validator import validate_email
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.email.spoken import MAX_SPOKEN_CHARS, AddressRefusal, ParsedAddress, parse_spoken_address
from engine.email.spoken_words import DIGIT_WORDS, IMPLICIT_TLDS, LEAD_WORDS, LETTER_NAMES, NATO, TAIL_WORDS, VOCAB

# (what STT wrote, the address, the read-back for the agent; None where the read-back is not the point)
PARSED: list[tuple[str, str, str | None]] = [
    # plain words and symbols
    ("john dot smith at gmail dot com", "john.smith@gmail.com", "john dot smith at gmail dot com"),
    ("john smith at gmail dot com", "johnsmith@gmail.com", "johnsmith at gmail dot com"),
    ("mary underscore jones at outlook dot com", "mary_jones@outlook.com", "mary underscore jones at outlook dot com"),
    ("mary under score jones at outlook dot com", "mary_jones@outlook.com", None),
    ("ann hyphen marie at mail dot com", "ann-marie@mail.com", "ann dash marie at mail dot com"),
    ("mary dash jane at hotmail dot com", "mary-jane@hotmail.com", None),
    ("john plus news at fastmail dot fm", "john+news@fastmail.fm", "john plus news at fastmail dot fm"),
    ("john plus sign news at fastmail dot fm", "john+news@fastmail.fm", None),
    ("sales at acme dot co dot uk", "sales@acme.co.uk", "sales at acme dot co dot uk"),
    ("first period last at company dot org", "first.last@company.org", None),
    ("info at my company dot com", "info@mycompany.com", None),
    ("kevin apostrophe brien at eircom dot net", "kevin'brien@eircom.net", "kevin apostrophe brien at eircom dot net"),
    ("O'Brien at eircom dot net", "o'brien@eircom.net", "o'brien at eircom dot net"),
    # "at" said other ways
    ("john at the rate gmail dot com", "john@gmail.com", "john at gmail dot com"),
    ("my email address is john at the rate of gmail dot com", "john@gmail.com", None),
    ("john at sign gmail dot com", "john@gmail.com", None),
    ("john at at gmail dot com", "john@gmail.com", None),
    ("meet me at john at gmail dot com", "meetmeatjohn@gmail.com", None),
    ("info at company dot at", "info@company.at", "info at company dot a-t"),
    # digits and number words
    ("john one two three at gmail dot com", "john123@gmail.com", "john one two three at gmail dot com"),
    ("john 123 at gmail dot com", "john123@gmail.com", "john one two three at gmail dot com"),
    ("mary jones twenty three at outlook dot com", "maryjones23@outlook.com", "maryjones two three at outlook dot com"),
    ("nineteen eighty four at gmail dot com", "1984@gmail.com", "one nine eight four at gmail dot com"),
    ("bob twenty twenty at yahoo dot com", "bob2020@yahoo.com", None),
    ("two thousand and five at gmail dot com", "2005@gmail.com", None),
    ("team two thousand twenty four at gmail dot com", "team2024@gmail.com", None),
    ("room one hundred at hotel dot com", "room100@hotel.com", None),
    (
        "agent double oh seven at mi six dot gov dot uk",
        "agent007@mi6.gov.uk",
        "agent zero zero seven at mi six dot gov dot uk",
    ),
    ("john double seven at gmail dot com", "john77@gmail.com", None),
    ("john triple three at gmail dot com", "john333@gmail.com", None),
    ("john seven oh one at gmail dot com", "john701@gmail.com", None),
    ("john zero at gmail dot com", "john0@gmail.com", None),
    ("twenty-three skidoo at gmail dot com", "23skidoo@gmail.com", None),
    # letters one by one, NATO, letter names, "as in", doubles
    ("j o h n at gmail dot com", "john@gmail.com", "j-o-h-n at gmail dot com"),
    ("J O H N dot smith at gmail dot com", "john.smith@gmail.com", "j-o-h-n dot smith at gmail dot com"),
    ("J. O. H. N. at Gmail dot com", "john@gmail.com", "j-o-h-n at gmail dot com"),
    ("j-o-h-n at gmail dot com", "john@gmail.com", "j-o-h-n at gmail dot com"),
    ("juliet oscar hotel november at gmail dot com", "john@gmail.com", "j-o-h-n at gmail dot com"),
    ("sierra mike india tango hotel at icloud dot com", "smith@icloud.com", "s-m-i-t-h at icloud dot com"),
    ("jay oh aitch en at yahoo dot com", "john@yahoo.com", "j-o-h-n at yahoo dot com"),
    ("b as in bravo o b at aol dot com", "bob@aol.com", "b-o-b at aol dot com"),
    ("j for juliet o h n at gmail dot com", "john@gmail.com", "j-o-h-n at gmail dot com"),
    ("s like sugar a m at gmail dot com", "sam@gmail.com", None),
    ("m a double t at example dot org", "matt@example.org", "m-a-t-t at example dot org"),
    ("t double e at gmail dot com", "tee@gmail.com", "t-e-e at gmail dot com"),
    ("double u double u at web dot de", "ww@web.de", "w-w at web dot de"),
    ("a triple x at gmail dot com", "axxx@gmail.com", None),
    ("mike at gmail dot com", "mike@gmail.com", "mike at gmail dot com"),
    ("papa alpha tango dot mike at gmail dot com", "pat.m@gmail.com", "p-a-t dot m at gmail dot com"),
    ("j o h n dot mike at gmail dot com", "john.mike@gmail.com", None),
    ("victor hugo at gmail dot com", "victorhugo@gmail.com", None),
    ("peter at hotel dot com", "peter@hotel.com", None),
    ("j smith at gmail dot com", "jsmith@gmail.com", "j smith at gmail dot com"),
    ("capital J O H N at gmail dot com", "john@gmail.com", "j-o-h-n at gmail dot com"),
    ("x-ray ray at protonmail dot com", "xrayray@protonmail.com", None),
    ("john at g m a i l dot com", "john@gmail.com", "john at g-m-a-i-l dot com"),
    # filler, lead-ins and sign-offs
    ("um john at gmail dot com", "john@gmail.com", "john at gmail dot com"),
    ("it's john at gmail dot com", "john@gmail.com", None),
    ("my email is john at gmail dot com", "john@gmail.com", None),
    ("my email is um mary underscore jones twenty three at outlook dot com", "mary_jones23@outlook.com", None),
    ("Sure, it's J. O. H. N. at Gmail dot com, thanks.", "john@gmail.com", "j-o-h-n at gmail dot com"),
    ("yeah so my email address is uh john at gmail dot com thank you", "john@gmail.com", None),
    ("you can send it to john at gmail dot com please", "john@gmail.com", None),
    ("okay that's john uh dot smith at gmail dot com", "john.smith@gmail.com", None),
    ("Capital J, O, H, N, all one word, at G mail dot com", "john@gmail.com", "j-o-h-n at g mail dot com"),
    ("er, erm, john at gmail dot com, that's it", "john@gmail.com", None),
    ("j o h n no space s m i t h, all in lowercase, at gmail dot com", "johnsmith@gmail.com", None),
    ("it's j smith at hot mail dot com", "jsmith@hotmail.com", "j smith at hotmail dot com"),
    ("john at i cloud dot com", "john@icloud.com", "john at i cloud dot com"),
    ("john at g mail com", "john@gmail.com", "john at g mail dot com"),
    # what STT writes: capitals, commas, symbols, missing "dot"
    ("John Dot Smith At Gmail Dot Com", "john.smith@gmail.com", None),
    ("john, dot, smith, at, gmail, dot, com", "john.smith@gmail.com", None),
    ("john.smith@gmail.com", "john.smith@gmail.com", "john dot smith at gmail dot com"),
    ("It's john.smith@gmail.com.", "john.smith@gmail.com", None),
    ("It's j-o-h-n.smith@gmail.com.", "john.smith@gmail.com", "j-o-h-n dot smith at gmail dot com"),
    ("john at gmail.com", "john@gmail.com", None),
    ("john at gmail dotcom", "john@gmail.com", None),
    ("john at gmail .com", "john@gmail.com", None),
    ("J O H N dot smith at gmail com", "john.smith@gmail.com", "j-o-h-n dot smith at gmail dot com"),
    ("john at gmail com please", "john@gmail.com", "john at gmail dot com"),
    ("john at bbc co uk", "john@bbc.co.uk", "john at bbc dot co dot uk"),
    ("JOHN AT OUTLOOK DOT COM", "john@outlook.com", None),
    ("J-O-H-N dot S-M-I-T-H at gmail.com", "john.smith@gmail.com", "j-o-h-n dot s-m-i-t-h at gmail dot com"),
    ("John.Smith at gmail.com", "john.smith@gmail.com", "john dot smith at gmail dot com"),
    ("john - smith at gmail dot com", "john-smith@gmail.com", "john dash smith at gmail dot com"),
    ("john underscore 9 9 at gmail dot com", "john_99@gmail.com", "john underscore nine nine at gmail dot com"),
    ("john dot smith at gmail dot c o m", "john.smith@gmail.com", "john dot smith at gmail dot c-o-m"),
    ("john at yahoo dot com dot au", "john@yahoo.com.au", None),
    ("john dot smith eighty seven at gmail dot com", "john.smith87@gmail.com", None),
    ("lisa at three m dot com", "lisa@3m.com", "lisa at three m dot com"),
    # a word and then its spelling, lead-ins that name letters and numbers
    ("my email is sarah s-a-r-a-h at gmail dot com", "sarah@gmail.com", "s-a-r-a-h at gmail dot com"),
    ("smith, s m i t h, at gmail dot com", "smith@gmail.com", "s-m-i-t-h at gmail dot com"),
    ("john j o h n dot smith s m i t h at gmail dot com", "john.smith@gmail.com", None),
    ("the letter j o h n at gmail dot com", "john@gmail.com", "j-o-h-n at gmail dot com"),
    ("john number five at gmail dot com", "john5@gmail.com", None),
    ("actually it's john at gmail dot com", "john@gmail.com", None),
    ("john at capital one dot com", "john@capital1.com", None),
    # written out already (the agent passing the address back with confirmed: true)
    ("a-b@x.com", "a-b@x.com", "a dash b at x dot com"),
    ("<John.Smith@Gmail.com>.", "john.smith@gmail.com", None),
    ("dot@x.com", "dot@x.com", "d-o-t at x dot com"),
    ("please.one@x.com", "please.one@x.com", "p-l-e-a-s-e dot o-n-e at x dot com"),
    ("john \u2019at\u2019 gmail dot com", "john@gmail.com", None),
]

# (what STT wrote, part of the reason, what was understood)
REFUSED: list[tuple[str, str, str]] = [
    ("", "did not hear an email address", ""),
    ("um uh", "did not hear an email address", ""),
    ("john smith", "did not hear 'at'", "johnsmith"),
    ("j o h n gmail dot com", "did not hear 'at'", "j-o-h-n gmail dot com"),
    ("at gmail dot com", "a name before the 'at'", "at gmail dot com"),
    ("john at", "a domain after the 'at'", "john at"),
    ("john at gmail", "no ending such as 'dot com'", "john at gmail"),
    ("john at g m a i l c o m", "no ending such as 'dot com'", "john at g-m-a-i-l-c-o-m"),
    ("john dot dot smith at gmail dot com", "two periods in a row", "john dot dot smith at gmail dot com"),
    ("john dot at gmail dot com", "period immediately before", "john dot at gmail dot com"),
    ("dot john at gmail dot com", "cannot start with a period", "dot john at gmail dot com"),
    ("john@gmail.com@yahoo.com", "'at' more than once", "john at gmail dot com at yahoo dot com"),
    ("john at dash gmail dot com", "hyphen", "john at dash gmail dot com"),
    ("john at gmail dot", "period", "john at gmail dot"),
    ("john at localhost dot test", "special-use", "john at localhost dot test"),
    (
        "john at g underscore mail dot com",
        "after the 'at' contains invalid characters",
        "john at g underscore mail dot com",
    ),
    ("john at gmail dot c", "the ending '.c' is too short", "john at gmail dot c"),
    ("john at dot com", "period immediately after the 'at'", "john at dot com"),
    ("just call me back", "did not hear 'at'", "justcallmeback"),
    (
        "john at gmail dot com, no sorry, at yahoo dot com",
        "corrected themselves",
        "johnatgmail dot comnosorry at yahoo dot com",
    ),
    (
        "john at gmail dot com, I mean yahoo dot com",
        "corrected themselves",
        "john at gmail dot com i meanyahoo dot com",
    ),
    ("john at gmail dot com, not yahoo", "corrected themselves", "john at gmail dot comnotyahoo"),
    ("I don't know my email", "did not hear 'at'", "i don'tknowmyemail"),
]


def test_the_corpus_is_large_enough() -> None:
    assert len(PARSED) + len(REFUSED) >= 60
    assert len(REFUSED) >= 10


@pytest.mark.parametrize(("spoken", "address", "spelled"), PARSED, ids=[p[0][:60] for p in PARSED])
def test_spoken_addresses_parse(spoken: str, address: str, spelled: str | None) -> None:
    result = parse_spoken_address(spoken)
    assert isinstance(result, ParsedAddress), result
    assert result.address == address
    if spelled is not None:
        assert result.spelled == spelled
    assert result.domain == address.rsplit("@", 1)[1]


@pytest.mark.parametrize(("spoken", "reason", "understood"), REFUSED, ids=[r[0][:60] or "empty" for r in REFUSED])
def test_what_is_not_an_address_is_refused_with_what_was_understood(spoken: str, reason: str, understood: str) -> None:
    result = parse_spoken_address(spoken)
    assert isinstance(result, AddressRefusal), result
    assert reason in result.reason
    assert result.understood == understood


def test_input_longer_than_any_address_is_refused_without_parsing() -> None:
    result = parse_spoken_address("john " * (MAX_SPOKEN_CHARS // 5 + 1))
    assert isinstance(result, AddressRefusal)
    assert str(MAX_SPOKEN_CHARS) in result.reason


def test_results_are_immutable() -> None:
    parsed, refused = parse_spoken_address("john at gmail dot com"), parse_spoken_address("john")
    assert isinstance(parsed, ParsedAddress) and isinstance(refused, AddressRefusal)
    with pytest.raises(AttributeError):
        parsed.address = "x@y.z"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        refused.reason = "fine"  # type: ignore[misc]


@pytest.mark.parametrize(("spoken", "address"), [(p[0], p[1]) for p in PARSED], ids=[p[0][:60] for p in PARSED])
def test_the_read_back_parses_to_the_same_address(spoken: str, address: str) -> None:
    """The agent may pass the read-back (or the address) to the confirming call: both must give the same address."""
    first = parse_spoken_address(spoken)
    assert isinstance(first, ParsedAddress)
    for again in (first.spelled, first.address):
        result = parse_spoken_address(again)
        assert isinstance(result, ParsedAddress), (again, result)
        assert result.address == address


_LOCAL_CHARS = "abcdefghijklmnopqrstuvwxyz0123456789"
_atom = st.text(_LOCAL_CHARS, min_size=1, max_size=8)
_local = st.lists(st.tuples(_atom, st.sampled_from(["", ".", "_", "-", "+"])), min_size=1, max_size=4).map(
    lambda parts: "".join(a + sep for a, sep in parts[:-1]) + parts[-1][0]
)
_label = st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=1, max_size=10)
_domain = st.tuples(
    st.lists(_label, min_size=1, max_size=3), st.sampled_from(["com", "org", "net", "co.uk", "io", "de"])
)
_addresses = st.tuples(_local, _domain).map(lambda t: f"{t[0]}@{'.'.join(t[1][0])}.{t[1][1]}")


@settings(max_examples=300, deadline=None)
@given(_addresses)
def test_any_written_address_and_its_read_back_parse_to_itself(address: str) -> None:
    parsed = parse_spoken_address(address)
    assert isinstance(parsed, ParsedAddress), parsed
    assert parsed.address == address
    again = parse_spoken_address(parsed.spelled)
    assert isinstance(again, ParsedAddress), (parsed.spelled, again)
    assert again.address == address, parsed.spelled


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=200)
    | st.lists(
        st.sampled_from(
            [
                "at",
                "dot",
                "double",
                "j",
                "one",
                "twenty",
                "hundred",
                "juliet",
                "oh",
                "um",
                "it's",
                "as",
                "in",
                "gmail",
                "com",
                "-",
                "@",
                ".",
                "and",
                "thousand",
            ]
        ),
        max_size=12,
    ).map(" ".join)
)
def test_nothing_said_makes_the_parser_fail_and_every_address_it_gives_is_valid(text: str) -> None:
    result = parse_spoken_address(text)
    if isinstance(result, ParsedAddress):
        assert validate_email(result.address, check_deliverability=False).normalized == result.address
    else:
        assert result.reason


_NATO_FOR = {letter: word for word, letter in reversed(NATO.items())}
_SEPARATORS = {".": ["dot", "period"], "_": ["underscore", "under score"], "-": ["dash", "hyphen"], "+": ["plus"]}
_AMBIGUOUS = VOCAB | NATO.keys() | LETTER_NAMES.keys() | LEAD_WORDS | TAIL_WORDS | IMPLICIT_TLDS


def _say(atom: str, style: str) -> str:
    """One run of an address as a caller says it: digits one by one, a word, its letters, or its NATO words."""
    if atom.isdigit():
        return " ".join(DIGIT_WORDS[int(d)] for d in atom)
    if style == "word" and len(atom) > 1 and atom not in _AMBIGUOUS:
        return atom
    return " ".join(_NATO_FOR[c] for c in atom) if style == "nato" else " ".join(atom)


@settings(max_examples=400, deadline=None)
@given(st.randoms(use_true_random=False))
def test_random_addresses_said_the_way_callers_say_them_parse_back(rnd: random.Random) -> None:
    """Each run said as a word, spelled, or in NATO (one spelling style per caller: a lone "mike" is a word unless
    the caller spelled with NATO words elsewhere), separators by any of their names, "at" or "at the rate of"."""
    letters = string.ascii_lowercase
    atoms = [
        "".join(rnd.choice(string.digits if digits else letters) for _ in range(rnd.randint(1, 5)))
        for digits in (rnd.random() < 0.25 for _ in range(rnd.randint(1, 3)))
    ]
    seps = [rnd.choice(list(_SEPARATORS)) for _ in atoms[1:]]
    labels = ["".join(rnd.choice(letters) for _ in range(rnd.randint(2, 8))) for _ in range(rnd.randint(1, 2))]
    tld = rnd.choice(["com", "org", "net", "co.uk", "de", "io"])
    address = atoms[0] + "".join(s + a for s, a in zip(seps, atoms[1:], strict=True)) + f"@{'.'.join(labels)}.{tld}"
    spell = rnd.choice(["letters", "nato"])
    styles = [rnd.choice(["word", spell]) for _ in atoms]
    nato_run = any(st == "nato" and len(a) > 1 and a.isalpha() for st, a in zip(styles, atoms, strict=True))
    styles = [
        "letters" if st == "nato" and len(a) == 1 and not nato_run else st for st, a in zip(styles, atoms, strict=True)
    ]
    words = [_say(atoms[0], styles[0])]
    for sep, atom, style in zip(seps, atoms[1:], styles[1:], strict=True):
        words += [rnd.choice(_SEPARATORS[sep]), _say(atom, style)]
    words.append(rnd.choice(["at", "at the rate", "at the rate of"]))
    words.append(" dot ".join(_say(label, rnd.choice(["word", "letters"])) for label in labels))
    words += [f"dot {part}" for part in tld.split(".")]
    spoken = ("my email is " if rnd.random() < 0.3 else "") + " ".join(words)
    result = parse_spoken_address(spoken.upper() if rnd.random() < 0.3 else spoken)
    assert isinstance(result, ParsedAddress), (spoken, result)
    assert result.address == address, spoken
