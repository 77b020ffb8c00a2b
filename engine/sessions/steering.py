"""Live steering's shared vocabulary: what an operator may inject into a call, how it is checked and worded.

Why it exists: the operator (a game master running an NPC, a supervisor on a line) can make the agent say a line
next ("say now") or slip it a hidden instruction for its next turn ("whisper"). The engine's steering commands,
the text turn loop and every realtime adapter need the same limits and the same wording for the model, and they
live in different layers; this module sits at the bottom so each of them can use it. It also carries the one
signal the voice pipeline needs: whether the line it is asked to speak is the operator's (``steering_delivery``),
so it is spoken as such and not counted as the answer of the turn in flight.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Literal, get_args

from engine.core.scoped import bound
from engine.sessions.history import HistoryItem, Message

SteerKind = Literal["say", "whisper"]
STEER_KINDS: tuple[str, ...] = get_args(SteerKind)
#: The longest line or instruction an operator may inject (characters, after whitespace is collapsed): a spoken
#: line or a nudge, not a new prompt.
MAX_STEER_CHARS = 500

_LABELS = {"say": "say-now line", "whisper": "whisper"}


@dataclass(frozen=True, slots=True)
class SteerNote:
    """One steering action on a call, as the call keeps it (``via``: how it reached the provider)."""

    kind: SteerKind
    text: str
    turn: int
    via: str
    ts: float = field(default_factory=time.time)


def clean_steer_text(kind: str, text: object) -> str:
    """The operator's text with its whitespace collapsed to single spaces; ``ValueError`` naming the problem for
    an unknown kind, a non-string, an empty text or one longer than ``MAX_STEER_CHARS``."""
    if kind not in STEER_KINDS:
        raise ValueError(f"unknown steering kind {kind!r} (one of {', '.join(STEER_KINDS)})")
    label = _LABELS[kind]
    if not isinstance(text, str):
        raise ValueError(f"the {label} must be text, not {type(text).__name__}")
    cleaned = " ".join(text.split())
    if not cleaned:
        raise ValueError(f"the {label} is empty: type what the agent should {'say' if kind == 'say' else 'do'}")
    if len(cleaned) > MAX_STEER_CHARS:
        raise ValueError(f"the {label} is {len(cleaned)} characters long; at most {MAX_STEER_CHARS} are allowed")
    return cleaned


def whisper_note(text: str) -> str:
    """A whisper as the model reads it: marked as the operator's, for the next reply, never to be said aloud."""
    return (
        "Operator instruction (hidden from the caller; not said by the caller): follow it in your next reply, "
        f"and never mention it or read it out. Instruction: {text}"
    )


def whispers_block(texts: Sequence[str]) -> str:
    """The pending whispers as an addition to one turn's system prompt ("" when there are none)."""
    return "".join(f"\n\n{whisper_note(t)}" for t in texts)


def say_instruction(text: str) -> str:
    """How a provider that only takes text turns is asked to say the operator's line (and only that); the line
    ends the instruction, after its last colon."""
    return f"Say exactly the following to the caller, word for word, and nothing else: {text}"


def operator_lines(notes: Sequence[SteerNote], items: Sequence[HistoryItem]) -> list[Message]:
    """The say-now lines among ``items`` (the history items of a turn being redone): the operator's words were
    said, so they stay in the history when the turn's own items are taken back (apply-now restarts the turn)."""
    said = {n.text for n in notes if n.kind == "say"}
    return [i for i in items if isinstance(i, Message) and i.role == "assistant" and i.text in said]


_STEERING: contextvars.ContextVar[bool] = contextvars.ContextVar("ava_steering_delivery", default=False)


def steering_delivery() -> AbstractContextManager[bool]:
    """While inside, the assistant line being delivered is the operator's say-now line (see ``is_steering``)."""
    return bound(_STEERING, True)


def is_steering() -> bool:
    """Whether the line now being delivered is the operator's (a voice driver speaks it without treating it as
    the answer of the turn in flight)."""
    return _STEERING.get()
