"""The canonical conversation of one call: the only source of truth for every provider request.

Provider payloads are rendered from this history on every request and never stored, so a call can change its
provider mid-conversation with its tool history intact. Tool calls carry canonical ids (``tc_1``, ``tc_2`` …),
stable for the life of the call; adapters map them to and from their provider's own ids.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

Role = Literal["user", "assistant", "system"]


@dataclass(frozen=True, slots=True)
class Message:
    role: Role
    text: str
    ts: float = field(default_factory=time.time)
    kind: Literal["message"] = "message"


@dataclass(frozen=True, slots=True)
class ToolCallItem:
    """The model asked for a tool. ``group`` ties together the calls of one model response (parallel calls)."""

    id: str
    name: str
    arguments: dict[str, Any]
    group: int
    ts: float = field(default_factory=time.time)
    #: The provider's own id for this call, when it gave one (kept for echoing back to the same provider).
    provider_ids: tuple[tuple[str, str], ...] = ()
    kind: Literal["tool_call"] = "tool_call"
    #: Opaque per-call data a provider needs echoed back (Gemini's ``thoughtSignature``), keyed by provider type:
    #: kept with the call so any later request to that provider type carries it, after any provider switch.
    provider_meta: tuple[tuple[str, Mapping[str, Any]], ...] = ()

    def meta_for(self, provider_type: str) -> Mapping[str, Any]:
        """This call's opaque data for one provider type (empty when it has none)."""
        for ptype, meta in self.provider_meta:
            if ptype == provider_type:
                return meta
        return {}


@dataclass(frozen=True, slots=True)
class ToolResultItem:
    call_id: str
    name: str
    status: str
    message: str
    data: Any = None
    ts: float = field(default_factory=time.time)
    kind: Literal["tool_result"] = "tool_result"

    def payload(self) -> dict[str, Any]:
        """The result as a provider receives it (status, message, data)."""
        return {"status": self.status, "message": self.message, "data": self.data}


HistoryItem = Message | ToolCallItem | ToolResultItem


def _is_user_message(item: HistoryItem) -> bool:
    return isinstance(item, Message) and item.role == "user"


class History:
    """An append-only list of canonical items, bounded by config (oldest whole exchanges dropped first)."""

    def __init__(self, limit: int = 200) -> None:
        self.limit = limit
        self._items: list[HistoryItem] = []
        #: Index of the last user message in ``_items`` (-1: none), so trimming a history with no user message
        #: past the cut (a realtime call's run of tool calls) does not scan the whole list on every add.
        self._last_user = -1
        self._next_call = 0
        self._next_group = 0

    def __len__(self) -> int:
        return len(self._items)

    def items(self) -> tuple[HistoryItem, ...]:
        return tuple(self._items)

    def snapshot(self) -> int:
        """A marker to restore to (apply-now restarts a turn from the same snapshot)."""
        return len(self._items)

    def restore(self, marker: int) -> None:
        del self._items[marker:]
        if self._last_user >= len(self._items):
            self._last_user = next(
                (i for i in range(len(self._items) - 1, -1, -1) if _is_user_message(self._items[i])), -1
            )

    def new_call_id(self) -> str:
        self._next_call += 1
        return f"tc_{self._next_call}"

    def new_group(self) -> int:
        self._next_group += 1
        return self._next_group

    def add(self, item: HistoryItem) -> None:
        self._items.append(item)
        if _is_user_message(item):
            self._last_user = len(self._items) - 1
        self._trim()

    def add_message(self, role: Role, text: str) -> Message:
        msg = Message(role, text)
        self.add(msg)
        return msg

    def _trim(self) -> None:
        if len(self._items) <= self.limit:
            return
        # Drop from the front, but never leave a tool result without its call: cut at a user message.
        excess = len(self._items) - self.limit
        cut = excess
        if self._last_user >= excess:  # there is a user message to cut at
            while not _is_user_message(self._items[cut]):
                cut += 1
        else:
            while cut < len(self._items) and isinstance(self._items[cut], ToolResultItem):
                cut += 1
        del self._items[:cut]
        self._last_user = self._last_user - cut if self._last_user >= cut else -1

    def annotate_call(self, call_id: str, provider_type: str, meta: Mapping[str, Any]) -> bool:
        """Attach a provider type's opaque data to a recorded call (replacing that type's earlier data); False
        when the call is no longer in the history."""
        for i in range(len(self._items) - 1, -1, -1):
            item = self._items[i]
            if isinstance(item, ToolCallItem) and item.id == call_id:
                kept = tuple((t, m) for t, m in item.provider_meta if t != provider_type)
                self._items[i] = replace(item, provider_meta=(*kept, (provider_type, dict(meta))))
                return True
        return False

    def pending_tool_calls(self) -> list[ToolCallItem]:
        """Tool calls with no result yet (a provider must answer every one)."""
        answered = {i.call_id for i in self._items if isinstance(i, ToolResultItem)}
        return [i for i in self._items if isinstance(i, ToolCallItem) and i.id not in answered]
