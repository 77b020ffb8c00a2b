"""The tool approval queue: tools that may do harm wait for the operator before they run.

Why a queue at all: a model can be talked into anything, and an MCP server's ``destructiveHint`` is the server
saying "this changes the world". A tool call waits for the operator when

* the call's context lists the tool under ``approve:`` (the operator's own config, always honoured), or
* its server declared ``destructiveHint: true`` and not ``readOnlyHint: true`` (per the MCP spec the destructive
  hint means something only for a tool that is not read-only). Annotations only ever ADD caution: a server that
  says ``destructiveHint: false`` or ``readOnlyHint: true`` never removes an approval the config asks for.

The execution path (engine.tools.execution) asks ``ApprovalDesk.admit`` after a call's name and arguments were
checked and before anything of the tool runs. Waiting publishes ``tool.approval_requested`` (with the arguments,
masked), asks the voice layer for a short "one moment" (``announcement.requested``, reason ``approval``) and
ends in exactly one ``tool.approval_resolved``: ``approved``, ``denied``, ``timed_out`` (``engine.tools.approvals.
timeout_ms``) or ``cancelled`` (the call ended, or its turn was cancelled). Only ``approved`` lets the tool run;
every other outcome is a ``rejected`` result whose message tells the model the operator did not approve it.

Without an operator nothing can approve: unless an approver is attached (the console attaches itself), a call
that needs approval is denied at once, so a headless ``ava-engine serve`` or ``call`` never hangs on one. An
operator's own direct call (``ava-engine mcp call``) is its own approval (``approved_by``). Calibration probes
never wait and never run such a tool: nobody approves a probe, so it is refused at once.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from prometheus_client import Counter

from engine.bounds.json_text import valid_text
from engine.config.models import Settings
from engine.core.metrics import Metrics
from engine.events import AnnouncementRequested, EventBus, ToolApprovalRequested, ToolApprovalResolved
from engine.redaction.redactor import Redactor
from engine.sessions.session import CallSession
from engine.tools.base import ToolDefinition
from engine.tools.view import matches_allowlist

log = logging.getLogger(__name__)

#: How a wait can end (``tool.approval_resolved``'s ``outcome``).
OUTCOMES = ("approved", "denied", "timed_out", "cancelled")
#: How many answered approvals are remembered, to say how one ended when it is answered again.
_REMEMBERED = 200


class ApprovalError(ValueError):
    """An approve/deny that cannot be done: no such pending approval (it says whether and how it ended)."""


def answer_text(key: str, value: object, limit: int, *, name: bool = False) -> str:
    """One field of an operator's answer (``by``, ``reason``), checked before anything is applied: text of at most
    ``limit`` characters, made valid (``valid_text``). A ``name`` (who answered: shown and logged as such) must be
    one printable line and must not need that repair (a lone surrogate, an invalid byte, or the U+FFFD a repair
    upstream left is no one's name). ``ValueError`` naming the field; else the text."""
    if not isinstance(value, str):
        raise ValueError(f"{key!r} must be text, got {type(value).__name__}")
    if len(value) > limit:
        raise ValueError(f"{key!r} is {len(value)} characters; at most {limit}")
    if not name:
        return valid_text(value)
    at = next((i for i, c in enumerate(value) if c == "\ufffd" or "\ud800" <= c <= "\udfff"), None)
    if at is not None:
        raise ValueError(f"{key!r} is not valid text: character {at} is a lone surrogate or an invalid byte")
    if not value.isprintable():
        at = next(i for i, c in enumerate(value) if not c.isprintable())
        raise ValueError(f"{key!r} must be one printable line: character {at} is {value[at]!r}")
    return value


@dataclass(frozen=True, slots=True)
class PendingApproval:
    """A tool call waiting for the operator: what, on which call, why, with which (masked) arguments, and until
    when (``deadline``, wall-clock seconds since the epoch, as ``time.time()``)."""

    approval_id: str
    call_id: str
    tool_call_id: str
    exposed_name: str
    server: str
    tool: str
    arguments: Mapping[str, Any]
    reason: str
    requested_at: float
    deadline: float


@dataclass(slots=True)
class _Waiting:
    pending: PendingApproval
    future: asyncio.Future[tuple[str, str, str]]
    session: CallSession | None = field(default=None)


def _listed(d: ToolDefinition, context: str, settings: Settings) -> str | None:
    ctx = settings.contexts.get(context)
    if ctx is not None and ctx.approve and matches_allowlist(d.name, ctx.approve):
        return f"the context {context!r} lists it under approve"
    return None


def approval_reason(d: ToolDefinition, session: CallSession | None, settings: Settings) -> str | None:
    """Why a call of ``d`` on ``session`` must wait for the operator, or None when it need not.

    The config is asked first and cannot be overruled; the server's annotations can only add a reason."""
    if session is not None and (listed := _listed(d, session.context, settings)) is not None:
        return listed
    hints = d.annotations or {}
    if hints.get("destructiveHint") is True and hints.get("readOnlyHint") is not True:
        return f"the server {d.server!r} declares it destructive"
    return None


class ApprovalDesk:
    """The pending approvals of one engine, the operator's answers to them, and who may answer."""

    def __init__(self, bus: EventBus, metrics: Metrics, settings: Callable[[], Settings], redact: Redactor) -> None:
        self.bus = bus
        self._settings = settings
        self._redact = redact
        self._waiting: dict[str, _Waiting] = {}
        self._ended: OrderedDict[str, str] = OrderedDict()
        self._approvers: dict[int, str] = {}
        self._ids = itertools.count(1)  # approval ids: ap-1, ap-2 …
        self._keys = itertools.count(1)  # approvers
        self._outcomes = Counter(
            "ai_agent_tool_approvals",
            "Tool calls that needed the operator's approval, by how the wait ended.",
            ["outcome"],
            registry=metrics.registry,
        )

    # ---------------------------------------------------------------------------------------- operator side

    def attach(self, name: str) -> Callable[[], None]:
        """An approver (the console) is present: calls needing approval wait for it. Returns the detach
        function; when the last approver leaves, what still waits is denied (nobody is left to answer)."""
        key = next(self._keys)
        self._approvers[key] = name

        def detach() -> None:
            if self._approvers.pop(key, None) is not None and not self._approvers:
                for w in list(self._waiting.values()):
                    self._answer(w, ("denied", "engine", f"the approver ({name}) left"))

        return detach

    @property
    def approvers(self) -> tuple[str, ...]:
        return tuple(self._approvers.values())

    def pending(self) -> list[PendingApproval]:
        """What waits now, oldest first."""
        return [w.pending for w in self._waiting.values()]

    def approve(self, approval_id: str, by: str = "operator") -> None:
        """Let the waiting call run. ``ApprovalError`` when there is no such pending approval."""
        self._answer(self._get(approval_id), ("approved", by, ""))

    def deny(self, approval_id: str, reason: str = "", by: str = "operator") -> None:
        """Refuse the waiting call (``reason`` goes to the model). ``ApprovalError`` when there is none."""
        self._answer(self._get(approval_id), ("denied", by, reason.strip()[:300]))

    def call_ended(self, session: CallSession) -> None:
        """A call ended (the call manager's end hook): its pending approvals end with it, unrun."""
        for w in list(self._waiting.values()):
            if w.pending.call_id == session.call_id:
                self._answer(w, ("cancelled", "engine", "the call ended"))

    def _get(self, approval_id: str) -> _Waiting:
        w = self._waiting.get(approval_id)
        if w is not None and not w.future.done():
            return w
        how = self._ended.get(approval_id) or (w.future.result()[0] if w is not None else None)
        if how is not None:
            raise ApprovalError(f"the approval {approval_id!r} is no longer pending: it was {how.replace('_', ' ')}")
        known = ", ".join(self._waiting) or "none"
        raise ApprovalError(f"no pending approval {approval_id!r} (pending: {known})")

    @staticmethod
    def _answer(w: _Waiting, answer: tuple[str, str, str]) -> None:
        if not w.future.done():
            w.future.set_result(answer)

    # ------------------------------------------------------------------------------------ execution side

    async def admit(
        self,
        session: CallSession | None,
        d: ToolDefinition,
        args: Mapping[str, Any],
        tool_call_id: str,
        approved_by: str | None = None,
        is_probe: bool = False,
    ) -> str | None:
        """None when the call may run now (it needs no approval, or the operator approved it); otherwise the
        message for the model saying why it was not run. A calibration probe of a tool that needs approval (by
        its annotations, or under any context's ``approve:``) is refused at once: nobody approves a probe."""
        settings = self._settings()
        why = approval_reason(d, session, settings)
        if is_probe:
            why = why or next((r for c in settings.contexts if (r := _listed(d, c, settings)) is not None), None)
            return None if why is None else f"not probed: {d.name} needs the operator's approval ({why})"
        if why is None or approved_by:
            return None
        cfg = settings.engine.approvals
        timeout = cfg.timeout_ms / 1000
        now = time.time()
        pending = PendingApproval(
            approval_id=f"ap-{next(self._ids)}",
            call_id=session.call_id if session is not None else "",
            tool_call_id=tool_call_id,
            exposed_name=d.name,
            server=d.server,
            tool=d.origin_name or d.name,
            arguments=self._redact.value(dict(args)),
            reason=why,
            requested_at=now,
            deadline=now + timeout,
        )
        self.bus.publish(
            ToolApprovalRequested(
                approval_id=pending.approval_id,
                call_id=pending.call_id,
                tool_call_id=tool_call_id,
                exposed_name=d.name,
                server=d.server,
                tool=pending.tool,
                arguments=dict(pending.arguments),
                reason=why,
                timeout_s=timeout,
                deadline=pending.deadline,
            )
        )
        if not self._approvers:
            return self._resolved(pending, "denied", "engine", "no operator is attached to approve it", timeout)
        w = _Waiting(pending, asyncio.get_running_loop().create_future(), session)
        self._waiting[pending.approval_id] = w
        if session is not None:  # the caller hears "one moment" (the voice layer speaks it, at most once a turn)
            self.bus.publish(
                AnnouncementRequested(call_id=session.call_id, text=cfg.message, exposed_name=d.name, reason="approval")
            )
        try:
            try:
                async with asyncio.timeout(timeout):
                    outcome, by, reason = await asyncio.shield(w.future)
            except TimeoutError:
                outcome, by, reason = w.future.result() if w.future.done() else ("timed_out", "timeout", "")
        except asyncio.CancelledError:
            ended = session is not None and session.state == "ended"
            self._resolved(pending, "cancelled", "engine", "the call ended" if ended else "the turn was cancelled", 0)
            raise
        finally:
            self._answer(w, ("cancelled", "engine", "no longer waited for"))
            self._waiting.pop(pending.approval_id, None)
        refusal = self._resolved(pending, outcome, by, reason, timeout)
        return None if outcome == "approved" else refusal

    def _resolved(self, pending: PendingApproval, outcome: str, by: str, reason: str, timeout: float) -> str:
        """Publish how the wait ended (once per approval) and return what the model is told when it was not run."""
        self._ended[pending.approval_id] = outcome
        while len(self._ended) > _REMEMBERED:
            self._ended.popitem(last=False)
        self._outcomes.labels(outcome).inc()
        self.bus.publish(
            ToolApprovalResolved(
                approval_id=pending.approval_id,
                call_id=pending.call_id,
                tool_call_id=pending.tool_call_id,
                exposed_name=pending.exposed_name,
                outcome=outcome,
                by=by,
                reason=reason,
            )
        )
        name = pending.exposed_name
        log.info(
            "approval %s for %s: %s by %s%s", pending.approval_id, name, outcome, by, f" ({reason})" if reason else ""
        )
        if outcome == "denied" and by == "engine":
            why = f"{name} needs the operator's approval ({pending.reason}) and {reason}"
            return f"not approved: {why}, so it was not run."
        if outcome == "denied":
            return (
                f"not approved: the operator did not approve {name}{': ' + reason if reason else ''}. It was not run."
            )
        if outcome == "timed_out":
            return f"not approved: the operator did not approve {name} within {timeout:g} seconds, so it was not run."
        return f"not approved: {name} was not run: {reason or 'the wait was cancelled'}."
