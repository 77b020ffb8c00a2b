"""Phrase patterns, text normalisation, and pronunciations for words outside the dictionary."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.voice.g2p import PronunciationError, espeak_pronunciation, espeak_to_arpabet, load_user_dictionary
from engine.voice.phrases import PhraseError, PhraseSet, normalize_text
from engine.voice.stt import Recognizer


def test_normalize_text() -> None:
    assert normalize_text("What's the weather at LSZH?") == "what's the weather at l s z h"
    assert normalize_text("Roll 2d20, please!") == "roll two d twenty please"
    assert normalize_text("It is 21.5 degrees") == "it is twenty one point five degrees"
    assert normalize_text("Hello   WORLD") == "hello w o r l d"  # all-caps words are codes, spelled out


def test_phrase_alternatives_and_options() -> None:
    ps = PhraseSet(["roll (two | 2 | three) dice [with (six | 6) sides]", "hello"])
    assert ps.sentences == {
        "hello",
        "roll two dice",
        "roll three dice",
        "roll two dice with six sides",
        "roll three dice with six sides",
    }
    assert "roll two dice" in ps and "roll two" not in ps
    assert (
        "public <phrase> = ( roll ( two | two | three ) dice [ with ( six | six ) sides ] ) | ( hello );" in ps.jsgf()
    )


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("roll (two", "missing ')'"),
        ("a | b", "outside of"),
        ("x ]", "unbalanced"),
        ("[ ]", "empty"),
        ("?!", "no words"),
    ],
)
def test_phrase_errors(pattern: str, message: str) -> None:
    with pytest.raises(PhraseError, match=re.escape(message)):
        PhraseSet([pattern])


def test_espeak_pronunciation_of_unknown_words() -> None:
    assert espeak_pronunciation("zorblax") == ["Z", "AO", "R", "B", "L", "AE", "K", "S"]
    assert espeak_pronunciation("dice") == ["D", "AY", "S"]


def test_unmapped_phoneme_names_the_word() -> None:
    with pytest.raises(PronunciationError, match=r"'Q9'.*'blorp'"):
        espeak_to_arpabet("blorp", ["b", "l", "Q9", "p"])


def test_user_dictionary(tmp_path: Path) -> None:
    path = tmp_path / "user.dict"
    path.write_text(";;; comment\nzorp Z AO1 R P\nzorp(2) Z AA R P\n", encoding="utf-8")
    assert load_user_dictionary(path) == {"zorp": ["Z", "AO", "R", "P"]}
    path.write_text("zorp Z QQ R P\n", encoding="utf-8")
    with pytest.raises(
        PronunciationError, match=r"user.dict:1: unknown ARPAbet phone\(s\) \['QQ'\] for the word 'zorp'"
    ):
        load_user_dictionary(path)


def test_recognizer_adds_missing_words(tmp_path: Path) -> None:
    user = tmp_path / "user.dict"
    user.write_text("kublai K UW B L AY\n", encoding="utf-8")
    rec = Recognizer(user_dictionary=user)
    assert rec.pronunciation("zorblax") is None
    rec.set_phrases(["summon the zorblax", "ask kublai"])
    assert rec.pronunciation("zorblax") == ["Z", "AO", "R", "B", "L", "AE", "K", "S"]  # from espeak-ng
    assert rec.pronunciation("kublai") == ["K", "UW", "B", "L", "AY"]  # from the user dictionary
    assert set(rec.added_words) == {"zorblax", "kublai"}


def test_recognizer_without_g2p_names_the_missing_word() -> None:
    rec = Recognizer(use_espeak_g2p=False)
    with pytest.raises(PronunciationError, match="'zorblax' is not in the recogniser's dictionary"):
        rec.set_phrases(["summon the zorblax"])
