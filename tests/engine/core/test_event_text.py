"""Every engine event reads as a sentence (issue 34 item 11): the console's event log and ``ava-engine call``'s text
output share ``engine.events.describe_event``, which never falls back to ``key=value`` pairs and words the approval
and question outcomes as people would ("nobody approved dice in time", never "timed out by timeout").

Before: the console's log printed ``call_id=c1 target=sales destination=… mode=warm`` for every event type its own
renderer did not know (transfers, usage, omitted tools, over-budget turns, e-mail, monitor changes …) and
"c1 dice timed out by timeout".
"""

from __future__ import annotations

import dataclasses
import re
import typing
from typing import Any

import engine.events as events
from engine.events import Event, ToolApprovalResolved, describe_event

KEY_VALUE = re.compile(r"\b[a-z_]+=\S")


def _sample(annotation: str) -> Any:
    if annotation.startswith(("tuple", "list")):
        return ()
    if annotation.startswith("dict"):
        return {}
    if annotation.startswith("bool"):
        return True
    if annotation.startswith("int"):
        return 3
    if annotation.startswith("float"):
        return 1.5
    if annotation.startswith("str"):
        return "alpha"
    return None


def _every_event() -> list[Event]:
    classes = {c.type: c for c in vars(events).values() if isinstance(c, type) and issubclass(c, Event)}
    classes.pop(Event.type)
    out = []
    for cls in classes.values():
        hints = typing.get_type_hints(cls)
        kwargs = {
            f.name: _sample(str(f.type))
            for f in dataclasses.fields(cls)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        }
        assert kwargs.keys() <= hints.keys()
        out.append(cls(**kwargs))
    return out


def test_every_event_type_reads_as_a_sentence() -> None:
    seen = _every_event()
    assert len(seen) >= 35  # the bus's whole vocabulary, email and questions included
    for ev in seen:
        for with_call in (True, False):
            text = describe_event(ev, with_call=with_call)
            assert text and not KEY_VALUE.search(text), (ev.type, text)
            assert ev.type not in text, (ev.type, text)  # words, not the dotted type
        if isinstance(getattr(ev, "call_id", None), str):
            assert describe_event(ev).startswith("alpha: ")
            assert not describe_event(ev, with_call=False).startswith("alpha: ")


def test_outcomes_read_as_people_say_them() -> None:
    timed_out = ToolApprovalResolved(
        approval_id="a1", call_id="c1", tool_call_id="t1", exposed_name="dice", outcome="timed_out", by="timeout"
    )
    assert describe_event(timed_out) == "c1: nobody approved dice in time, so it was not run."
    denied = ToolApprovalResolved(
        approval_id="a1",
        call_id="c1",
        tool_call_id="t1",
        exposed_name="dice",
        outcome="denied",
        by="operator",
        reason="not today",
    )
    assert describe_event(denied) == "c1: the operator denied dice: not today."
    question = events.ElicitationResolved(
        elicitation_id="e1",
        call_id="c1",
        tool_call_id="t1",
        exposed_name="book",
        action="decline",
        by="timeout",
        reason="no answer within 30 seconds",
    )
    assert describe_event(question) == "c1: nobody answered book's question in time (no answer within 30 seconds)."
    for ev in (timed_out, question):
        assert "by timeout" not in describe_event(ev)
