"""Expected phrases → normalised word sequences and a JSGF grammar for the recogniser.

A phrase pattern is plain text with two kinds of markup: ``(a | b)`` for alternatives and ``[words]`` for an
optional part, nestable, e.g. ``"roll (two | 2) dice [with six sides]"``. Words are normalised the way the
recogniser spells them: lowercase, punctuation stripped (apostrophes inside words kept: ``what's``), numbers
written out with num2words (``20`` → ``twenty``, ``d20`` → ``d twenty``), all-caps codes spelled letter by letter
(``LSZH`` → ``l s z h``). ``PhraseSet`` knows every sentence its patterns allow, so a recogniser can check that a
grammar result is a whole phrase, not a partial path.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import product

from num2words import num2words

MAX_EXPANSIONS = 20000

_TOKEN = re.compile(r"\s*(\(|\)|\[|\]|\||[^\s()\[\]|]+)")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_ACRONYM = re.compile(r"[A-Z]{2,6}")
_SPLIT_ALNUM = re.compile(r"(?<=[A-Za-z])(?=\d)|(?<=\d)(?=[A-Za-z])")


class PhraseError(ValueError):
    """A phrase pattern could not be parsed."""


def _number_words(token: str) -> list[str]:
    text = num2words(float(token) if "." in token else int(token))
    return re.sub(r"[-,]", " ", text).split()


def normalize_words(text: str) -> list[str]:
    """Text → the recogniser's words (see module docstring)."""
    words: list[str] = []
    for raw in text.split():
        for part in _SPLIT_ALNUM.split(raw):
            part = part.strip('.,;:!?"“”‘’()[]{}<>')
            part = part.replace("’", "'")
            if not part:
                continue
            if _NUMBER.fullmatch(part):
                words.extend(_number_words(part))
                continue
            if _ACRONYM.fullmatch(part):
                words.extend(part.lower())
                continue
            for piece in re.split(r"[^A-Za-z0-9']+", part):
                piece = piece.strip("'").lower()
                if not piece:
                    continue
                if piece.isdigit():
                    words.extend(_number_words(piece))
                else:
                    words.append(piece)
    return words


def normalize_text(text: str) -> str:
    return " ".join(normalize_words(text))


# AST: a sequence is a list of items; an item is a word (str), an Alt (list of sequences) or an Opt (sequence).
@dataclass(frozen=True)
class _Alt:
    options: tuple[tuple[object, ...], ...]


@dataclass(frozen=True)
class _Opt:
    body: tuple[object, ...]


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.pattern = pattern
        self.tokens = [m.group(1) for m in _TOKEN.finditer(pattern)]
        self.pos = 0

    def fail(self, msg: str) -> PhraseError:
        return PhraseError(f"phrase pattern {self.pattern!r}: {msg}")

    def parse(self) -> tuple[object, ...]:
        seq = self.sequence(closing=None)
        if self.pos != len(self.tokens):
            raise self.fail(f"unexpected {self.tokens[self.pos]!r}")
        if not seq:
            raise self.fail("no words")
        return seq

    def alternatives(self, closing: str) -> list[tuple[object, ...]]:
        options = [self.sequence(closing)]
        while self.pos < len(self.tokens) and self.tokens[self.pos] == "|":
            self.pos += 1
            options.append(self.sequence(closing))
        if self.pos >= len(self.tokens) or self.tokens[self.pos] != closing:
            raise self.fail(f"missing {closing!r}")
        self.pos += 1
        return options

    def sequence(self, closing: str | None) -> tuple[object, ...]:
        items: list[object] = []
        while self.pos < len(self.tokens):
            tok = self.tokens[self.pos]
            if tok in (")", "]"):
                if tok != closing:
                    raise self.fail(f"unbalanced {tok!r}")
                break
            if tok == "|":
                if closing is None:
                    # top-level alternatives: treat the whole pattern as one group
                    raise self.fail("'|' outside of ( ) — wrap alternatives in parentheses")
                break
            self.pos += 1
            if tok == "(":
                options = self.alternatives(")")
                if any(not o for o in options):
                    raise self.fail("empty alternative inside ( ); use [ ] for optional words")
                items.append(_Alt(tuple(options)))
            elif tok == "[":
                options = self.alternatives("]")
                body: tuple[object, ...] = options[0] if len(options) == 1 else (_Alt(tuple(options)),)
                if not body:
                    raise self.fail("empty [ ]")
                items.append(_Opt(body))
            else:
                items.extend(normalize_words(tok))
        return tuple(items)


def _expand(seq: tuple[object, ...]) -> list[tuple[str, ...]]:
    parts: list[list[tuple[str, ...]]] = []
    for item in seq:
        if isinstance(item, str):
            parts.append([(item,)])
        elif isinstance(item, _Alt):
            parts.append([e for opt in item.options for e in _expand(opt)])
        elif isinstance(item, _Opt):
            parts.append([(), *_expand(item.body)])
        total = 1
        for p in parts:
            total *= len(p)
        if total > MAX_EXPANSIONS:
            raise PhraseError(f"phrase pattern allows more than {MAX_EXPANSIONS} sentences; simplify it")
    return [tuple(w for chunk in combo for w in chunk) for combo in product(*parts)]


def _jsgf(seq: tuple[object, ...]) -> str:
    out: list[str] = []
    for item in seq:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, _Alt):
            out.append("( " + " | ".join(_jsgf(o) for o in item.options) + " )")
        elif isinstance(item, _Opt):
            out.append("[ " + _jsgf(item.body) + " ]")
    return " ".join(out)


class PhraseSet:
    """Parsed phrase patterns: their words, every sentence they allow, and the JSGF grammar for them."""

    def __init__(self, patterns: list[str]) -> None:
        if not patterns:
            raise PhraseError("no phrases given")
        self.patterns = list(patterns)
        self._asts = [_Parser(p).parse() for p in patterns]
        sentences: set[str] = set()
        for ast in self._asts:
            for words in _expand(ast):
                if words:
                    sentences.add(" ".join(words))
                if len(sentences) > MAX_EXPANSIONS:
                    raise PhraseError(f"phrases allow more than {MAX_EXPANSIONS} sentences; simplify them")
        self.sentences = frozenset(sentences)
        self.words = frozenset(w for s in sentences for w in s.split())

    def __contains__(self, text: object) -> bool:
        return isinstance(text, str) and text in self.sentences

    def jsgf(self, name: str = "expected") -> str:
        body = " | ".join(f"( {_jsgf(ast)} )" for ast in self._asts)
        return f"#JSGF V1.0;\ngrammar {name};\npublic <phrase> = {body};\n"
