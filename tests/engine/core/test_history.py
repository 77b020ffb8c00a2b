"""Canonical history: stable ids, snapshots for apply-now, bounded without orphaning tool results."""

from __future__ import annotations

from engine.sessions.history import History, Message, ToolCallItem, ToolResultItem


def test_ids_are_stable_and_increasing() -> None:
    h = History()
    assert [h.new_call_id() for _ in range(3)] == ["tc_1", "tc_2", "tc_3"]


def test_snapshot_restore() -> None:
    h = History()
    h.add_message("user", "a")
    m = h.snapshot()
    h.add(ToolCallItem("tc_1", "x", {}, 1))
    h.restore(m)
    assert len(h) == 1


def test_trim_never_leaves_a_result_without_its_call() -> None:
    h = History(limit=5)
    for i in range(6):
        h.add_message("user", f"q{i}")
        h.add(ToolCallItem(f"tc_{i}", "x", {}, i))
        h.add(ToolResultItem(f"tc_{i}", "x", "success", "ok"))
    items = h.items()
    assert len(items) <= 5
    assert isinstance(items[0], Message) and items[0].role == "user"
    calls = {i.id for i in items if isinstance(i, ToolCallItem)}
    assert all(r.call_id in calls for r in items if isinstance(r, ToolResultItem))


def test_pending_tool_calls() -> None:
    h = History()
    h.add(ToolCallItem("tc_1", "x", {}, 1))
    h.add(ToolCallItem("tc_2", "y", {}, 1))
    h.add(ToolResultItem("tc_1", "x", "success", "ok"))
    assert [c.id for c in h.pending_tool_calls()] == ["tc_2"]
