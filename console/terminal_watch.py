"""Notices that the console's terminal is gone (its window closed, its tmux session killed) and ends the console.

Why it exists: Textual's input thread reads the terminal in a loop; when the terminal disappears without a SIGHUP
reaching the console (it ran under ``make run``, whose shell took the hang-up), every read returns end-of-file at
once and the thread spins — a console nobody can see kept 60 % of a core busy, with its engine and calls still up.
A pseudo-terminal that is gone has no name left in the file system (its ``st_nlink`` drops to 0), so a look every
couple of seconds at the console's own input tells it is alone, and the console quits the way it always does.

A browser tab's console (``--web``) has no terminal: its terminal is the web server that started it. When that server
is killed (SIGKILL included) the console is adopted by another process; ``watch_parent`` notices that from the very
start (before the app has mounted anything: a server killed during the tab's start left a console idling forever) and
sends the console SIGTERM, which Textual's web driver turns into a normal quit.
"""

from __future__ import annotations

import os
import signal
import stat
import threading
import time

#: How often the console looks (seconds): cheap (one ``fstat``), and a closed window may take this long to end.
CHECK_EVERY_S = 2.0


def is_terminal(fd: int) -> bool:
    """``fd`` is a terminal now (the console watches only then: under tests and pipes there is none to lose)."""
    try:
        return os.isatty(fd)
    except OSError:
        return False


def terminal_gone(fd: int) -> bool:
    """The terminal on ``fd`` was hung up and removed (or ``fd`` is no longer open at all)."""
    try:
        st = os.fstat(fd)
    except OSError:
        return True
    return stat.S_ISCHR(st.st_mode) and st.st_nlink == 0


def watch_parent(started_under: int, every_s: float = 1.0) -> threading.Thread:
    """A daemon thread that sends this process SIGTERM once its parent is no longer ``started_under`` (the pid of
    the process that started it): at once if that is so already."""

    def watch() -> None:
        while os.getppid() == started_under:
            time.sleep(every_s)
        os.kill(os.getpid(), signal.SIGTERM)

    thread = threading.Thread(target=watch, name="parent-watch", daemon=True)
    thread.start()
    return thread
