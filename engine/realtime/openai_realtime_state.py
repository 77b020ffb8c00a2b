"""The bookkeeping of one OpenAI Realtime call: which response is in flight, which calls it made, what audio came.

Why it exists: the Realtime API leaves the client to keep three rules it does not enforce for us — never ask
for a response while one is in flight (``response.create`` then fails with
``conversation_already_has_active_response``), run a response's function calls only once its ``response.done``
says ``completed``, and truncate an assistant item only to audio that was actually received. Keeping that state
here, with no socket in it, lets the session module stay about I/O and lets the rules be tested on their own.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.realtime.session import AudioSpec

#: What a queued ``response.create`` is for: a redo after apply-now or a reconnect, the answer to tool results,
#: the greeting, a slow-tool announcement, the operator's say-now line. Redos and tool answers go to the front of
#: the queue; they and say-now lines are asked again when a response server VAD started was in the way.
RequestKind = Literal["redo", "tools", "greeting", "announce", "say"]
_FRONT: frozenset[str] = frozenset({"redo", "tools"})
_RETRIED: frozenset[str] = _FRONT | {"say"}
_AUDIO_ITEMS_KEPT = 256
_SENT_KEPT = 16


@dataclass(frozen=True, slots=True)
class PendingCall:
    """A function call the model made, waiting for its response's ``response.done``."""

    call_id: str
    name: str
    arguments: str


@dataclass(slots=True)
class ResponseLedger:
    """Responses in flight and queued, and the calls of each response until it is done."""

    #: The response in flight (``response.created`` seen, ``response.done`` not yet).
    active: str | None = None
    #: ``event_id`` of our ``response.create`` not yet answered by ``response.created`` (or an error).
    requested: str | None = None
    pending: deque[tuple[RequestKind, dict[str, Any] | None]] = field(default_factory=deque)
    #: Our recent ``response.create`` events by ``event_id``, kept after ``response.created`` too: a response
    #: server VAD started at the same moment looks the same, and only an error naming the event tells them apart.
    sent: OrderedDict[str, tuple[RequestKind, dict[str, Any] | None]] = field(default_factory=OrderedDict)
    calls: dict[str, dict[str, PendingCall]] = field(default_factory=dict)
    #: What the response requested or in flight was asked for (None: one server VAD started on its own).
    current: tuple[RequestKind, dict[str, Any] | None] | None = None

    @property
    def busy(self) -> bool:
        return self.active is not None or self.requested is not None

    def queue(self, kind: RequestKind, body: dict[str, Any] | None) -> None:
        if kind == "announce":
            self.drop_announcements()  # only the latest announcement is worth saying
        if kind in _FRONT:
            self.pending.appendleft((kind, body))
        else:
            self.pending.append((kind, body))

    def drop_announcements(self) -> None:
        self.pending = deque(p for p in self.pending if p[0] != "announce")

    def next_request(self) -> tuple[RequestKind, dict[str, Any] | None] | None:
        return self.pending.popleft() if self.pending and not self.busy else None

    def begin(self, event_id: str, kind: RequestKind, body: dict[str, Any] | None) -> None:
        self.requested = event_id
        self.current = (kind, body)
        self.sent[event_id] = (kind, body)
        while len(self.sent) > _SENT_KEPT:
            self.sent.popitem(last=False)

    def created(self, response_id: str) -> None:
        if self.requested is None:
            self.current = None  # server VAD started this one: nothing of ours to say again
        self.active = response_id
        self.requested = None

    def refused(self, event_id: str, code: Any) -> bool:
        """Our ``response.create`` ``event_id`` got an error. When a response server VAD started at the same
        moment was in the way, an answer to tool results, a redo or an operator's line is asked again after it —
        True; a greeting or an announcement is stale once the caller has spoken, and is dropped."""
        request = self.sent.pop(event_id, None)
        if self.requested == event_id:
            self.requested = None
        if request is not None and request == self.current:
            self.current = None  # the response in flight (if any) is not this one
        if request is not None and code == "conversation_already_has_active_response" and request[0] in _RETRIED:
            self.pending.appendleft(request)
            return True
        return request is not None and code == "conversation_already_has_active_response"

    def record_call(self, response_id: str, item: Mapping[str, Any]) -> None:
        call_id, name, args = item["call_id"], item["name"], item.get("arguments", "")
        if not isinstance(call_id, str) or not call_id or not isinstance(name, str) or not name:
            raise ValueError("a function call without a call_id or name")
        self.calls.setdefault(response_id, {})[call_id] = PendingCall(
            call_id, name, args if isinstance(args, str) else ""
        )

    def done(self, response_id: str) -> list[PendingCall]:
        """The response is over: nothing is in flight; its calls (in the order they came) are handed out."""
        self.active = None
        self.current = None
        return list(self.calls.pop(response_id, {}).values())

    def reset(self) -> tuple[bool, dict[str, Any] | None]:
        """The socket dropped: everything in flight is gone (its calls never ran). Whether a response was, and
        what it was asked with (its instructions: a greeting, an announcement, a say-now line; None for a plain
        answer), so that exactly that is asked for again."""
        cut = (self.busy, self.current[1] if self.busy and self.current else None)
        self.active = self.requested = self.current = None
        self.calls.clear()
        self.sent.clear()
        return cut


@dataclass(slots=True)
class AudioLedger:
    """Assistant audio received per item (for truncation) and audio seconds sent and received (for usage)."""

    output_spec: AudioSpec
    input_spec: AudioSpec
    received_ms: OrderedDict[str, float] = field(default_factory=OrderedDict)
    finished: set[str] = field(default_factory=set)
    truncated: set[str] = field(default_factory=set)
    last_item: str | None = None
    in_bytes: int = 0
    out_bytes: int = 0

    def received(self, item: str | None, nbytes: int) -> None:
        self.out_bytes += nbytes
        if item is None:
            return
        self.received_ms[item] = self.received_ms.get(item, 0.0) + self.output_spec.duration_ms(nbytes)
        self.received_ms.move_to_end(item)
        while len(self.received_ms) > _AUDIO_ITEMS_KEPT:  # a long call: forget the oldest items entirely
            old, _ = self.received_ms.popitem(last=False)
            self.finished.discard(old)
            self.truncated.discard(old)
        self.last_item = item

    def truncation(self, item_id: str | None, played_ms: float) -> tuple[str, int] | None:
        """``(item, audio_end_ms)`` to truncate after a barge-in, or None: unknown item (never received, or
        from a socket before a reconnect), already truncated, or heard to its end."""
        item = item_id or self.last_item
        if item is None or item not in self.received_ms or item in self.truncated:
            return None
        received = int(self.received_ms[item])
        end = max(0, min(int(played_ms), received))
        if item in self.finished and end >= received:
            return None
        self.truncated.add(item)
        return item, end

    def usage_seconds(self) -> tuple[float, float]:
        """Audio seconds sent and received since the last call (then counted from zero again)."""
        out = (
            self.input_spec.duration_ms(self.in_bytes) / 1000.0,
            self.output_spec.duration_ms(self.out_bytes) / 1000.0,
        )
        self.in_bytes = self.out_bytes = 0
        return out

    def reset(self) -> None:
        """A new socket: the old conversation's items cannot be truncated there."""
        self.received_ms.clear()
        self.finished.clear()
        self.truncated.clear()
        self.last_item = None
