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


def test_trimming_a_long_run_of_tool_items_matches_a_full_scan() -> None:
    """The trim's shortcut (no user message past the cut: skip the scan) cuts exactly where scanning would."""
    import random

    from engine.sessions.history import HistoryItem

    rng = random.Random(7)
    h, mirror = History(limit=12), list[HistoryItem]()
    for step in range(600):
        roll = rng.random()
        if roll < 0.1:
            item: HistoryItem = Message("user", f"u{step}")
        elif roll < 0.15:
            item = Message("assistant", f"a{step}")
        elif roll < 0.6:
            item = ToolCallItem(f"tc_{step}", "t", {}, step)
        else:
            item = ToolResultItem(f"tc_{step - 1}", "t", "success", "ok")
        h.add(item)
        mirror.append(item)
        if len(mirror) > h.limit:  # the rule, by a full scan
            excess = len(mirror) - h.limit
            users = [i for i, m in enumerate(mirror) if isinstance(m, Message) and m.role == "user" and i >= excess]
            cut = users[0] if users else None
            if cut is None:
                cut = excess
                while cut < len(mirror) and isinstance(mirror[cut], ToolResultItem):
                    cut += 1
            del mirror[:cut]
        if step % 97 == 0 and len(mirror) > 3:  # an apply-now restart drops the turn's tail
            marker = len(mirror) - 2
            h.restore(marker)
            del mirror[marker:]
        assert list(h.items()) == mirror, step
