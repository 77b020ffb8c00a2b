"""Rolling a parsed dice expression and saying the result out loud.

Why it exists: the arithmetic of keep/drop/exploding dice and the one-line spoken summary are the parts
a game master hears, so they live in one pure module that takes its random source as a parameter
(seeded in tests and with ``--seed``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from engine.servers.common import join_spoken
from engine.servers.dice.notation import FUDGE, ConstantTerm, DiceTerm, Expression, Limits

_FUDGE_WORDS = {-1: "minus", 0: "blank", 1: "plus"}


@dataclass
class Die:
    value: int
    kept: bool = True
    from_explosion: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "kept": self.kept, "from_explosion": self.from_explosion}


@dataclass
class TermResult:
    term: DiceTerm | ConstantTerm
    dice: list[Die]
    subtotal: int
    explosion_capped: bool = False

    def as_dict(self) -> dict[str, Any]:
        if isinstance(self.term, ConstantTerm):
            return {
                "kind": "constant",
                "notation": self.term.notation,
                "sign": self.term.sign,
                "subtotal": self.subtotal,
            }
        return {
            "kind": "dice",
            "notation": self.term.notation,
            "sign": self.term.sign,
            "count": self.term.count,
            "sides": self.term.sides,
            "dice": [die.as_dict() for die in self.dice],
            "subtotal": self.subtotal,
            "explosion_capped": self.explosion_capped,
        }


@dataclass
class RollResult:
    expression: Expression
    terms: list[TermResult]
    total: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "expression": self.expression.notation,
            "total": self.total,
            "terms": [term.as_dict() for term in self.terms],
        }


def _roll_one(sides: int | str, rng: random.Random) -> int:
    if sides == FUDGE:
        return rng.randint(-1, 1)
    assert isinstance(sides, int)
    return rng.randint(1, sides)


def roll_term(term: DiceTerm, rng: random.Random, limits: Limits) -> TermResult:
    dice: list[Die] = []
    capped = False
    for _ in range(term.count):
        value = _roll_one(term.sides, rng)
        dice.append(Die(value))
        explosions = 0
        while term.explode and value == term.sides:
            if explosions >= limits.max_explosions:
                capped = True
                break
            explosions += 1
            value = _roll_one(term.sides, rng)
            dice.append(Die(value, from_explosion=True))
    if term.keep or term.drop:
        high_low, amount = term.keep or term.drop  # type: ignore[misc]
        order = sorted(range(len(dice)), key=lambda i: (dice[i].value, i), reverse=(high_low == "h"))
        # keep N highest -> everything after the first N in descending order is dropped;
        # drop N lowest -> the first N in ascending order are dropped.
        dropped = order[amount:] if term.keep else order[:amount]
        for index in dropped:
            dice[index].kept = False
    subtotal = sum(die.value for die in dice if die.kept)
    return TermResult(term, dice, subtotal * term.sign, capped)


def roll(expression: Expression, rng: random.Random, limits: Limits | None = None) -> RollResult:
    limits = limits or Limits()
    results: list[TermResult] = []
    for term in expression.terms:
        if isinstance(term, ConstantTerm):
            results.append(TermResult(term, [], term.value * term.sign))
        else:
            results.append(roll_term(term, rng, limits))
    return RollResult(expression, results, sum(result.subtotal for result in results))


def _say_die(value: int, sides: int | str) -> str:
    return _FUDGE_WORDS[value] if sides == FUDGE else str(value)


def _describe_dice(result: TermResult) -> str:
    term = result.term
    assert isinstance(term, DiceTerm)
    kept = [_say_die(d.value, term.sides) for d in result.dice if d.kept]
    dropped = [_say_die(d.value, term.sides) for d in result.dice if not d.kept]
    text = join_spoken(kept)
    if dropped:
        text += f", dropped {join_spoken(dropped)}"
    explosions = sum(1 for d in result.dice if d.from_explosion)
    if explosions:
        text += f", with {explosions} exploding {'die' if explosions == 1 else 'dice'}"
    if result.explosion_capped:
        text += " (explosions stopped at the limit)"
    return text


def speak(result: RollResult) -> str:
    """One spoken line, e.g. ``You rolled 2d6: 3 and 5, total 8.``"""
    notation = result.expression.notation
    terms = result.terms
    if len(terms) == 1 and isinstance(terms[0].term, DiceTerm):
        only = terms[0]
        if len(only.dice) == 1 and only.term.sign > 0:
            return f"You rolled {notation}: {_describe_dice(only)}."
        return f"You rolled {notation}: {_describe_dice(only)}, total {result.total}."
    parts: list[str] = []
    for index, term_result in enumerate(terms):
        term = term_result.term
        if isinstance(term, ConstantTerm):
            parts.append(f"{'minus' if term.sign < 0 else 'plus'} {term.value}")
        else:
            prefix = "minus " if term.sign < 0 else ""
            parts.append(f"{prefix}{term.notation} gave {_describe_dice(term_result)}")
        if index == 0 and isinstance(term, ConstantTerm) and term.sign > 0:
            parts[0] = str(term.value)
    return f"You rolled {notation}: {'; '.join(parts)}; total {result.total}."
