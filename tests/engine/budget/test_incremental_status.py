"""``TierBoard.recorded`` (the per-call fast path) against ``refresh`` (the full rebuild) on random traffic.

The fast path skips rebuilding a tool's status when its class provably did not change; these tests replay the
same random invocations on two boards and require the same revisions, the same ``on_change`` calls and, when
read, the same statuses.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from engine.budget.stats import BookKey, LatencyBook
from engine.budget.tiers import TierBoard, ToolStatus
from engine.config.models import BudgetConfig
from engine.tools.base import LatencyMeta, ToolDefinition


def _board(clock: list[float], cfg: BudgetConfig) -> tuple[TierBoard, list[tuple[str | None, str]]]:
    book = LatencyBook(cfg.window, lambda: clock[0])
    board = TierBoard(book, lambda: cfg, lambda server: "local", lambda: clock[0])
    changes: list[tuple[str | None, str]] = []

    def on_change(old: ToolStatus | None, new: ToolStatus) -> None:
        changes.append((old.tier if old else None, f"{new.tier}/{new.health}/{new.badge}"))

    board.on_change = on_change
    return board, changes


def _measured(cfg: BudgetConfig) -> tuple[TierBoard, list[tuple[str | None, str]], ToolDefinition, BookKey]:
    """A board whose one tool has just enough 10 ms calls to be measured (FAST, Lightning), its status built."""
    board, changes = _board([0.0], cfg)
    d = ToolDefinition("t", "d")
    key = board.key_for(d)
    for _ in range(cfg.min_samples):
        board.book.record(key, 10.0, "success")
    board.refresh(d)
    return board, changes, d, key


@pytest.mark.parametrize("seed", range(12))
def test_recorded_matches_a_full_refresh_after_every_call(seed: int) -> None:
    rng = random.Random(seed)
    cfg = BudgetConfig.model_validate({"window": rng.choice([5, 20, 100]), "health_horizon_s": 30})
    lat = rng.choice([LatencyMeta(), LatencyMeta(max_duration_ms=400), LatencyMeta(estimated_duration_ms=120)])
    d = ToolDefinition("t", "d", latency=lat)
    clock = [1000.0]
    fast, fast_changes = _board(clock, cfg)
    full, full_changes = _board(clock, cfg)
    fast.status(d)
    full.status(d)
    # phases of traffic: quick, slow, failing, mixed; the class moves between them
    for _ in range(600):
        phase = (_ // 60) % 4
        ms = {0: rng.uniform(1, 40), 1: rng.uniform(100, 3000), 2: rng.uniform(1, 60), 3: rng.uniform(1, 900)}[phase]
        status = "error" if (phase == 2 and rng.random() < 0.6) or rng.random() < 0.05 else "success"
        clock[0] += rng.choice([0.01, 0.5, 2.0])
        for board in (fast, full):
            board.book.record(board.key_for(d), ms, status)
        fast.recorded(d)
        full.refresh(d)
        assert fast.revision == full.revision
        assert fast_changes == full_changes
        if rng.random() < 0.2:  # a reader (a view, the console) looks now and then
            assert fast.status(d) == full.status(d)
    assert fast.status(d) == full.status(d)
    assert fast.known() == full.known()


def test_a_recorded_call_that_keeps_the_class_leaves_the_revision_and_rebuilds_only_when_read() -> None:
    cfg = BudgetConfig()
    board, changes, d, key = _measured(cfg)
    revision, first = board.revision, board.status(d)
    board.book.record(key, 12.0, "success")
    board.recorded(d)
    assert board.revision == revision and len(changes) == 1  # same tier, health and badge: views stay valid
    again = board.status(d)
    assert again.samples == first.samples + 1 and again.tier == first.tier  # but the numbers are current


def test_seed_builds_a_missing_status_once_so_a_first_call_that_changes_nothing_leaves_views_alone() -> None:
    cfg = BudgetConfig()
    clock = [0.0]
    board, changes = _board(clock, cfg)
    d = ToolDefinition("t", "d")
    board.seed(d)  # the budget layer seeds it when a call starts, as building a view would have
    revision = board.revision
    board.book.record(board.key_for(d), 10.0, "success")
    board.recorded(d)
    assert board.revision == revision and len(changes) == 0
    first = board.status(d)
    board.seed(d)
    assert board.status(d) is first  # an existing status is left as it is


def test_a_call_inside_its_bands_is_settled_without_the_full_check_and_one_outside_them_moves_the_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The steady state (a healthy measured tool staying in its tier and badge) is decided by the bands alone;
    a call that moves the p99 past the tier's bound still changes the class."""
    cfg = BudgetConfig()
    board, changes, d, key = _measured(cfg)
    assert board.status(d).tier == "fast" and board.status(d).badge == "Lightning"
    full_checks: list[str] = []
    same_class = board._same_class

    def counted(*args: Any) -> bool:
        full_checks.append(args[0].name)
        return same_class(*args)

    monkeypatch.setattr(board, "_same_class", counted)
    revision = board.revision
    for _ in range(50):
        board.book.record(key, 12.0, "success")
        board.recorded(d)
    assert full_checks == [] and board.revision == revision
    for _ in range(cfg.window):  # slower than the FAST budget: the p99 leaves the band, the tool moves up a tier
        board.book.record(key, cfg.tiers.fast + 1.0, "success")
        board.recorded(d)
    assert board.status(d).tier == "standard" and board.revision > revision
    assert changes[-1][1].startswith("standard/")
