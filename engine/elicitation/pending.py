"""The elicitation desk's records: a pending question, its answer's future, and the errors and voice it uses.

Apart from ``engine.elicitation.desk`` (which re-exports them) so the desk module is only the desk's logic.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, Protocol

from engine.elicitation.schema import FormField


class ElicitationError(ValueError):
    """An operator's answer that cannot be given: no such question, or content that does not fit the form."""


class CallerVoice(Protocol):
    async def say(self, call_id: str, text: str) -> bool:
        """Speak ``text`` to the caller (and show it on the transcript); False when the call cannot be spoken to."""
        ...


@dataclass(frozen=True, slots=True)
class PendingElicitation:
    """A question waiting for the operator (the console's form is built from ``fields``)."""

    elicitation_id: str
    call_id: str
    tool_call_id: str
    server: str
    tool: str
    exposed_name: str
    message: str
    mode: str
    schema: dict[str, Any]
    url: str | None
    deadline: float
    fields: tuple[FormField, ...] = ()


@dataclass(slots=True)
class Ask:
    """A question and the future its answer settles."""

    pending: PendingElicitation
    future: asyncio.Future[tuple[str, dict[str, Any], str]] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


def settle(future: asyncio.Future[Any], value: Any) -> None:
    """Resolve ``future`` with ``value`` unless it is already done (a late answer is dropped)."""
    if not future.done():
        future.set_result(value)
