"""The console ends when its terminal goes away (window closed, tmux session killed) instead of spinning unseen."""

from __future__ import annotations

import os
import pty
from pathlib import Path

from console.terminal_watch import is_terminal, terminal_gone

ROOT = Path(__file__).resolve().parents[2]


def test_a_closed_pseudo_terminal_is_seen_as_gone() -> None:
    master, slave = pty.openpty()
    try:
        assert is_terminal(slave) and not terminal_gone(slave)
        os.close(master)  # the window closes
        assert terminal_gone(slave)
    finally:
        os.close(slave)
    assert terminal_gone(slave)  # a descriptor that is no longer open
    r, w = os.pipe()
    try:
        assert not is_terminal(r) and not terminal_gone(r)  # pipes (tests, CI) have no terminal to lose
    finally:
        os.close(r)
        os.close(w)
