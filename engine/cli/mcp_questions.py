"""The questions a tool asks during ``ava-engine mcp call`` (MCP elicitation): who answers, and what the operator
is told.

Why it exists: a one-shot call has no caller and no console form to answer a server's ``elicitation/create`` (or a
2026 ``InputRequiredResult``). By default the engine's elicitation desk declines it, as the operator's call is in no
context that names someone to ask; with ``--accept-defaults`` the desk accepts it with the form's defaults
(SEP-1034), or declines it naming the required fields that have none. Either way each question is reported: a note
on stderr (with, when it was declined, how ``--accept-defaults`` would answer) and ``elicitations`` in ``--json``.
"""

from __future__ import annotations

import json
from typing import Any

from engine.events import ElicitationRequested, ElicitationResolved, Subscription

_DONE = {"decline": "declined", "cancel": "cancelled"}


class CallQuestions:
    """Watches one engine's questions while the operator's call runs; ``accept_defaults`` sets who answers them."""

    def __init__(self, engine: Any, accept_defaults: bool) -> None:
        engine.elicitations.accept_defaults = accept_defaults
        self.accept_defaults = accept_defaults
        self._sub: Subscription = engine.bus.subscribe(types={ElicitationRequested.type, ElicitationResolved.type})

    def asked(self) -> list[dict[str, Any]]:
        """Each question that was asked and settled: server, tool, message, mode, action, by, reason, content."""
        events = self._sub.drain()
        self._sub.close()
        requested = {e.elicitation_id: e for e in events if isinstance(e, ElicitationRequested)}
        out: list[dict[str, Any]] = []
        for e in events:
            if isinstance(e, ElicitationResolved) and e.elicitation_id in requested:
                q = requested[e.elicitation_id]
                out.append(
                    {
                        "server": q.server,
                        "tool": q.tool,
                        "message": q.message,
                        "mode": q.mode,
                        "action": e.action,
                        "by": e.by,
                        "reason": e.reason,
                        "content": e.content,
                    }
                )
        return out

    def notes(self, asked: list[dict[str, Any]]) -> list[str]:
        """One stderr note per question: what was asked and how it was answered."""
        out = []
        for q in asked:
            head = f"server {q['server']!r} (tool {q['tool']!r}) asked: {q['message']}"
            if q["action"] == "accept":
                out.append(
                    f"{head}\n  answered with the form's defaults: {json.dumps(q['content'], ensure_ascii=False)}"
                )
            elif self.accept_defaults:
                out.append(f"{head}\n  {_DONE.get(q['action'], q['action'])}: {q['reason']}")
            else:
                out.append(
                    f"{head}\n  declined: nobody answers a tool's questions in `mcp call`; add --accept-defaults to "
                    "answer with the form's defaults"
                )
        return out
