"""Two engines sharing a recordings folder that start the same call id in the same millisecond each keep their
whole recording: the name is taken and the file created in one step, so neither can lose the race for it."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.recorder.files import open_new_events

STARTED = 1_800_000_000.5  # 2027-01-15 08:00:00.500 UTC


def test_a_name_taken_after_any_look_gets_the_next_suffix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The other engine creates the file just after a look at the folder: every look is stale. (Looking first and
    creating after raised FileExistsError here, and the whole call went unrecorded.)"""
    (tmp_path / "20270115T080000.500Z-call-7.jsonl").write_text("the other engine's\n")
    monkeypatch.setattr(Path, "exists", lambda self: False)
    path, f = open_new_events(tmp_path, "call-7", STARTED)
    with f:
        f.write("mine\n")
    assert path.name == "20270115T080000.500Z-call-7~2.jsonl"
    assert (tmp_path / "20270115T080000.500Z-call-7.jsonl").read_text() == "the other engine's\n"


def test_names_in_order(tmp_path: Path) -> None:
    opened = [open_new_events(tmp_path, "call-7", STARTED) for _ in range(3)]
    for _, f in opened:
        f.close()
    assert [p.name for p, _ in opened] == [
        "20270115T080000.500Z-call-7.jsonl",
        "20270115T080000.500Z-call-7~2.jsonl",
        "20270115T080000.500Z-call-7~3.jsonl",
    ]
