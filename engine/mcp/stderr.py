"""Capture a stdio MCP server's stderr: a ring buffer of the last lines, and rate-limited logging.

Why it exists: a server's stderr is where it says why it failed, so the operator must see it (status, console),
but a server that floods stderr must neither fill memory nor drown the engine's log. The SDK's ``stdio_client``
needs a real file descriptor for ``errlog`` (a ``StringIO`` fails), so this owns an OS pipe: the write end goes to
the child, the read end is watched by the event loop.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections import deque
from collections.abc import Callable
from typing import TextIO

log = logging.getLogger("engine.mcp.stderr")

MAX_LINE = 1000


class StderrCapture:
    """One pipe per child process; ``lines`` holds the last ``keep`` lines (redacted, cut to 1000 chars)."""

    def __init__(
        self,
        server_id: str,
        *,
        keep: int = 200,
        lines_per_second: int = 20,
        redact: Callable[[str], str] | None = None,
    ) -> None:
        self.server_id = server_id
        self.lines: deque[str] = deque(maxlen=keep)
        self.total_lines = 0
        self.suppressed_total = 0
        self._rate = lines_per_second
        self._window_start = 0.0
        self._window_count = 0
        self._suppressed = 0
        self._redact = redact
        self._partial = b""
        self._read_fd: int | None = None
        self._write_file: TextIO | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def open(self) -> TextIO:
        """A new pipe; returns the write end to hand to the child (``errlog``)."""
        self.close()
        r, w = os.pipe()
        os.set_blocking(r, False)
        self._read_fd = r
        self._write_file = os.fdopen(w, "w")
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(r, self._on_readable)
        return self._write_file

    def child_started(self) -> None:
        """The child holds its own copy of the write end now: drop ours so EOF means the child is gone."""
        if self._write_file is not None:
            self._write_file.close()
            self._write_file = None

    def _on_readable(self) -> None:
        fd = self._read_fd
        if fd is None:
            return
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._flush_partial()
            self._stop_reading()
            return
        data = self._partial + chunk
        *complete, self._partial = data.split(b"\n")
        if len(self._partial) > MAX_LINE * 4:  # a never-ending line still shows up
            complete.append(self._partial)
            self._partial = b""
        for raw in complete:
            self._add(raw)

    def _flush_partial(self) -> None:
        if self._partial:
            self._add(self._partial)
            self._partial = b""

    def _add(self, raw: bytes) -> None:
        text = raw.decode("utf-8", "replace").rstrip("\r")
        if not text.strip():
            return
        if len(text) > MAX_LINE:
            text = text[:MAX_LINE] + "…"
        if self._redact is not None:
            text = self._redact(text)
        self.total_lines += 1
        self.lines.append(text)
        now = time.monotonic()
        if now - self._window_start >= 1.0:
            if self._suppressed:
                log.warning("[%s] … %s lines suppressed", self.server_id, f"{self._suppressed:,}")
            self._window_start, self._window_count, self._suppressed = now, 0, 0
        self._window_count += 1
        if self._window_count <= self._rate:
            log.info("[%s] %s", self.server_id, text)
        else:
            self._suppressed += 1
            self.suppressed_total += 1

    def tail(self, n: int = 20) -> list[str]:
        return list(self.lines)[-n:]

    def _stop_reading(self) -> None:
        if self._read_fd is not None:
            if self._loop is not None and not self._loop.is_closed():
                self._loop.remove_reader(self._read_fd)
            os.close(self._read_fd)
            self._read_fd = None

    def close(self) -> None:
        """Read whatever is left, then release both ends of the pipe."""
        for _ in range(64):  # drain what is already buffered, bounded
            fd = self._read_fd
            if fd is None:
                break
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # BlockingIOError: nothing more for now
                break
            if not chunk:
                break
            data = self._partial + chunk
            *complete, self._partial = data.split(b"\n")
            for raw in complete:
                self._add(raw)
        if self._suppressed:
            log.warning("[%s] … %s lines suppressed", self.server_id, f"{self._suppressed:,}")
            self._suppressed = 0
        self._flush_partial()
        self._stop_reading()
        if self._write_file is not None:
            self._write_file.close()
            self._write_file = None
