"""Dice notation: a small tokenizer and recursive-descent parser (no eval).

Why it exists: the dice server must accept what players actually type or say (``2d6+1d4-2``,
``4d6kh3``, ``2d20kl1``, ``4d6dl1``, ``3d6!``, ``d%``, ``4dF``) and refuse everything else with an error
that says what was wrong and where, within explicit limits. Parsing is kept apart from rolling so it can
be tested without randomness.

Grammar (case-insensitive, whitespace ignored)::

    expression := [sign] term (sign term)*
    term       := NUMBER [dice] | dice
    dice       := "d" (NUMBER | "%" | "F") modifier*
    modifier   := "!" | ("kh" | "kl" | "k" | "dh" | "dl" | "d") NUMBER
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

FUDGE: Literal["F"] = "F"
_WORDS = ("kh", "kl", "dh", "dl", "k", "d", "f")


class DiceError(ValueError):
    """A dice expression that cannot be parsed or breaks a limit; the message says why."""


@dataclass(frozen=True)
class Limits:
    """Upper bounds that keep one roll cheap and its spoken answer short."""

    max_expression_length: int = 100
    max_terms: int = 10
    max_dice_per_term: int = 100
    max_sides: int = 1000
    max_explosions: int = 20
    max_constant: int = 10000


@dataclass(frozen=True)
class Token:
    kind: Literal["num", "word", "+", "-", "%", "!"]
    text: str
    pos: int


@dataclass(frozen=True)
class DiceTerm:
    """``count`` dice of ``sides`` (an int, or ``"F"`` for Fudge) with optional modifiers."""

    sign: int
    count: int
    sides: int | Literal["F"]
    explode: bool = False
    keep: tuple[Literal["h", "l"], int] | None = None
    drop: tuple[Literal["h", "l"], int] | None = None

    @property
    def notation(self) -> str:
        if self.sides == 100 and self._percent:
            text = "d%" if self.count == 1 else f"{self.count}d%"
        else:
            text = f"{self.count}d{self.sides}"
        if self.explode:
            text += "!"
        if self.keep:
            text += f"k{self.keep[0]}{self.keep[1]}"
        if self.drop:
            text += f"d{self.drop[0]}{self.drop[1]}"
        return text

    _percent: bool = field(default=False, compare=False)


@dataclass(frozen=True)
class ConstantTerm:
    sign: int
    value: int

    @property
    def notation(self) -> str:
        return str(self.value)


Term = DiceTerm | ConstantTerm


@dataclass(frozen=True)
class Expression:
    terms: tuple[Term, ...]

    @property
    def notation(self) -> str:
        parts: list[str] = []
        for index, term in enumerate(self.terms):
            if index == 0:
                parts.append(("-" if term.sign < 0 else "") + term.notation)
            else:
                parts.append(("-" if term.sign < 0 else "+") + term.notation)
        return "".join(parts)


def tokenize(text: str) -> list[Token]:
    """Split ``text`` into tokens; letters are matched greedily against the known modifier words."""
    tokens: list[Token] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char.isspace():
            index += 1
        elif char.isdigit():
            start = index
            while index < len(text) and text[index].isdigit():
                index += 1
            tokens.append(Token("num", text[start:index], start))
        elif char in "+-%!":
            tokens.append(Token(char, char, index))  # type: ignore[arg-type]
            index += 1
        elif char.isalpha():
            lowered = text[index : index + 2].lower()
            word = next((w for w in _WORDS if lowered.startswith(w)), None)
            if word is None:
                raise DiceError(f"unexpected {char!r} at position {index + 1} in {text!r}")
            tokens.append(Token("word", word, index))
            index += len(word)
        else:
            raise DiceError(f"unexpected {char!r} at position {index + 1} in {text!r}")
    return tokens


#: A keep or drop modifier: highest or lowest, and how many.
_Pick = tuple[Literal["h", "l"], int]


class _Parser:
    def __init__(self, text: str, limits: Limits) -> None:
        self.text = text
        self.limits = limits
        self.tokens = tokenize(text)
        self.index = 0

    def peek(self) -> Token | None:
        return self.tokens[self.index] if self.index < len(self.tokens) else None

    def take(self) -> Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def where(self) -> str:
        token = self.peek()
        return f"at position {token.pos + 1}" if token else "at the end"

    def number(self, what: str) -> int:
        token = self.peek()
        if token is None or token.kind != "num":
            found = repr(token.text) if token else "the end"
            raise DiceError(f"expected {what} {self.where()} in {self.text!r}, found {found}")
        self.take()
        return int(token.text)

    def parse(self) -> Expression:
        if not self.tokens:
            raise DiceError("the dice expression is empty; try something like 2d6+1")
        terms: list[Term] = []
        sign = 1
        token = self.peek()
        if token and token.kind in "+-":
            sign = -1 if self.take().kind == "-" else 1
        terms.append(self.term(sign))
        while (token := self.peek()) is not None:
            if token.kind not in "+-":
                raise DiceError(f"expected + or - {self.where()} in {self.text!r}, found {token.text!r}")
            sign = -1 if self.take().kind == "-" else 1
            terms.append(self.term(sign))
            if len(terms) > self.limits.max_terms:
                raise DiceError(f"too many terms: the limit is {self.limits.max_terms} terms per roll")
        if not any(isinstance(term, DiceTerm) for term in terms):
            raise DiceError(f"there are no dice in {self.text!r}; add a die such as 1d20")
        return Expression(tuple(terms))

    def term(self, sign: int) -> Term:
        token = self.peek()
        count: int | None = None
        if token is not None and token.kind == "num":
            count = int(self.take().text)
            following = self.peek()
            if following is None or following.kind != "word" or following.text != "d":
                if count > self.limits.max_constant:
                    raise DiceError(f"the number {count} is over the limit of {self.limits.max_constant}")
                return ConstantTerm(sign, count)
        token = self.peek()
        if token is None or token.kind != "word" or token.text != "d":
            found = repr(token.text) if token else "the end"
            raise DiceError(f"expected a number or a die like d6 {self.where()} in {self.text!r}, found {found}")
        self.take()
        return self.dice(sign, 1 if count is None else count)

    def dice(self, sign: int, count: int) -> DiceTerm:
        limits = self.limits
        if count < 1:
            raise DiceError("the number of dice must be at least 1")
        if count > limits.max_dice_per_term:
            raise DiceError(f"{count} dice is over the limit of {limits.max_dice_per_term} dice per term")
        sides, percent = self.sides()
        explode = False
        keep: _Pick | None = None
        drop: _Pick | None = None
        while (token := self.peek()) is not None and token.kind in ("!", "word"):
            if token.kind == "!":
                self.take()
                if explode:
                    raise DiceError(f"'!' given twice for the same dice at position {token.pos + 1}")
                if sides == FUDGE:
                    raise DiceError("Fudge dice (dF) cannot explode")
                explode = True
                continue
            if token.text not in ("kh", "kl", "k", "dh", "dl", "d"):
                break
            self.take()
            if keep or drop:
                raise DiceError(f"only one keep or drop modifier is allowed per term (position {token.pos + 1})")
            keep, drop = self.keep_or_drop(token, count)
        return DiceTerm(sign, count, sides, explode, keep, drop, _percent=percent)

    def sides(self) -> tuple[int | Literal["F"], bool]:
        """The die after 'd': ``%`` (100, and whether it was written so), ``F`` (Fudge) or a number of sides."""
        token = self.peek()
        if token is not None and token.kind == "%":
            self.take()
            return 100, True
        if token is not None and token.kind == "word" and token.text == "f":
            self.take()
            return FUDGE, False
        sides = self.number("the number of sides after 'd'")
        if sides < 2:
            raise DiceError(f"a die needs at least 2 sides, got d{sides}")
        if sides > self.limits.max_sides:
            raise DiceError(f"d{sides} is over the limit of {self.limits.max_sides} sides")
        return sides, False

    def keep_or_drop(self, token: Token, count: int) -> tuple[_Pick | None, _Pick | None]:
        """(keep, None) or (None, drop) for the modifier ``token`` (already taken) and the amount after it."""
        amount = self.number(f"how many dice to {'keep' if token.text[0] == 'k' else 'drop'}")
        if token.text[0] == "k":
            if not 1 <= amount <= count:
                raise DiceError(f"cannot keep {amount} of {count} dice; keep between 1 and {count}")
            return ("l" if token.text == "kl" else "h", amount), None
        if not 0 <= amount < count:
            raise DiceError(f"cannot drop {amount} of {count} dice; drop between 0 and {count - 1}")
        return None, ("h" if token.text == "dh" else "l", amount)


def parse(text: str, limits: Limits | None = None) -> Expression:
    """Parse a dice expression, raising :class:`DiceError` with a precise message when it is invalid."""
    limits = limits or Limits()
    if len(text) > limits.max_expression_length:
        raise DiceError(f"the expression is {len(text)} characters long; the limit is {limits.max_expression_length}")
    return _Parser(text, limits).parse()
