"""The elicitation events (``elicitation.requested|waiting|resolved``), re-exported by ``engine.events``.

Why apart: ``engine.events`` is long already; these three belong to one feature (engine.elicitation.desk), and the
bus, the recorder and the console reach them through ``engine.events`` like every other event.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from engine.events.catalog import Event


@dataclass(frozen=True, slots=True, kw_only=True)
class ElicitationRequested(Event):
    """A tool asked for input mid-call: ``ask`` says who answers (caller, operator, decline), ``mode`` form or
    url; ``schema`` is the requested form (``url`` for URL mode), ``deadline`` epoch seconds."""

    type: ClassVar[str] = "elicitation.requested"
    elicitation_id: str
    call_id: str
    tool_call_id: str
    exposed_name: str
    server: str
    tool: str
    ask: str
    mode: str
    message: str
    schema: dict[str, Any] = field(default_factory=dict)
    url: str | None = None
    timeout_s: float = 0.0
    deadline: float = 0.0


@dataclass(frozen=True, slots=True, kw_only=True)
class ElicitationWaiting(Event):
    """The engine now waits for ``who`` (caller or operator); for the caller, ``prompt`` is what was just said and
    ``expect`` the answers the offline recogniser listens for."""

    type: ClassVar[str] = "elicitation.waiting"
    elicitation_id: str
    call_id: str
    tool_call_id: str
    who: str
    prompt: str = ""
    expect: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True, kw_only=True)
class ElicitationResolved(Event):
    """How it ended: ``action`` accept, decline or cancel, ``by`` whom (caller, operator, policy, timeout, engine),
    ``reason`` in words; ``content`` is the accepted answer (masked like every event)."""

    type: ClassVar[str] = "elicitation.resolved"
    elicitation_id: str
    call_id: str
    tool_call_id: str
    exposed_name: str
    action: str
    by: str
    reason: str = ""
    content: dict[str, Any] = field(default_factory=dict)
