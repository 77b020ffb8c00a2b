"""A watchdog process that kills every child of the engine when the engine dies, SIGKILL included.

Why it exists: each stdio MCP server (and the bundle child) runs in a process group of its own (the SDK's
``start_new_session=True``), so nothing the kernel does when the engine dies reaches it, and an engine killed with
SIGKILL cannot clean up: a server hung in initialize, and its grandchildren, lived on with parent 1. Neither anyio's
``open_process`` nor asyncio's gives a ``preexec_fn`` for PR_SET_PDEATHSIG, and that would only reach the direct child
anyway (not ``npx``'s node, not the sleep of ``sh -c``).

So the engine's process starts one reaper (this file, run as ``python -I -S reaper.py RUN_ID ENGINE_PID``: the
standard library only, no site packages; one start per engine process, never one per child) before its first
child, with a pipe to its stdin. The engine tells it each child's process group as it registers it (``+PGID``) and
when the group is reaped (``-PGID``); see ``ChildGroups``. When the pipe reaches EOF (the engine exited or died),
or the engine is seen gone (the reaper's own PR_SET_PDEATHSIG on Linux, and its parent pid changing), the reaper
sends SIGTERM to every registered group and to every process whose environment carries the engine's marker
(``AVA_ENGINE_CHILD=RUN_ID``, put in each child's environment by ``child_env`` and inherited by grandchildren: it
closes the gap between a spawn and its registration, and reaches a grandchild that left the group with ``setsid``),
then SIGKILL to whatever is left after ``GRACE_S``, and exits. Without /proc (no marker scan) or prctl it still
kills the registered groups on EOF.

Nothing here is on a tool call's path: a line on a pipe per spawn and per reap.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import logging
import os
import secrets
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, MutableSet

#: The environment variable that marks every process the engine started (its value: the engine's run id).
MARKER = "AVA_ENGINE_CHILD"
#: After SIGTERM, how long the engine's children get before SIGKILL.
GRACE_S = 1.0
#: How often the reaper checks that its engine is still its parent (where no death signal tells it).
PARENT_POLL_S = 1.0
#: Rounds of SIGKILL (a child may fork while it is being killed).
KILL_ROUNDS = 5
#: At the engine's normal exit, how long it waits for the reaper to finish (so no process outlives it for long).
EXIT_WAIT_S = 2.0
_PR_SET_PDEATHSIG = 1

log = logging.getLogger(__name__)


# ---- the reaper process (standard library only: it runs with -I -S) ----


class _EngineGone(Exception):
    """The reaper's parent died (its death signal arrived and the parent pid changed)."""


def _set_death_signal(sig: int) -> None:
    """Ask Linux to send ``sig`` to this process when its parent dies (a no-op elsewhere)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _proc_stat(pid: str) -> tuple[str, int] | None:
    """A process's state and process group, from /proc (None when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0].decode(), int(fields[2])


def _marked(pid: str, marker: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            environ = f.read()
    except OSError:
        return False
    return environ.startswith(marker) or b"\0" + marker in environ


def targets(groups: Iterable[int], run_id: str) -> set[int] | None:
    """Live processes (zombies aside) in ``groups`` or carrying ``run_id``'s marker; None without /proc."""
    if not os.path.isdir("/proc/self"):
        return None
    marker = f"{MARKER}={run_id}\0".encode()
    wanted = set(groups)
    me = os.getpid()
    out: set[int] = set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        stat = _proc_stat(entry)
        if stat is None or stat[0] in ("Z", "X"):
            continue
        if stat[1] in wanted or _marked(entry, marker):
            out.add(int(entry))
    return out


def _signal_all(groups: Iterable[int], pids: Iterable[int], sig: int) -> None:
    for pgid in groups:
        with contextlib.suppress(OSError):
            os.killpg(pgid, sig)
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, sig)


def _groups_alive(groups: Iterable[int]) -> bool:
    """Without /proc: whether a process (a zombie counts) is left in any of ``groups``."""
    for pgid in groups:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            continue
        except OSError:
            return True
        return True
    return False


def kill_children(groups: set[int], run_id: str, grace_s: float = GRACE_S) -> None:
    """SIGTERM every registered group and marked process, SIGKILL what is left after ``grace_s``."""
    left = targets(groups, run_id)
    _signal_all(groups, left or (), signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        left = targets(groups, run_id)
        if (not left) if left is not None else not _groups_alive(groups):
            return
        time.sleep(0.05)
    for _ in range(KILL_ROUNDS):
        _signal_all(groups, left or (), signal.SIGKILL)
        time.sleep(0.05)
        left = targets(groups, run_id)
        if not left:
            return


def _apply(line: bytes, groups: set[int]) -> None:
    text = line.strip()
    if len(text) < 2 or not text[1:].isdigit():
        return
    pgid = int(text[1:])
    if text[:1] == b"+":
        groups.add(pgid)
    elif text[:1] == b"-":
        groups.discard(pgid)


def _serve(fd: int, parent: int, groups: set[int], wait_s: float | None = PARENT_POLL_S) -> None:
    """Read registrations from ``fd`` until EOF or the parent's death; with ``wait_s=0``, only what is there now."""
    pending = b""
    while True:
        ready, _, _ = select.select([fd], [], [], wait_s)
        if not ready:
            if wait_s == 0 or os.getppid() != parent:
                return
            continue
        data = os.read(fd, 65536)
        if not data:
            return
        *lines, pending = (pending + data).split(b"\n")
        for line in lines:
            _apply(line, groups)


def main(argv: list[str]) -> int:
    if len(argv) != 3 or not argv[2].isdigit():
        print("usage: reaper.py RUN_ID ENGINE_PID", file=sys.stderr)
        return 2
    run_id, parent = argv[1], int(argv[2])
    groups: set[int] = set()

    def on_term(_sig: int, _frame: object) -> None:
        if os.getppid() != parent:  # a death signal; a thread of the engine ending sends it too: then carry on
            raise _EngineGone

    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_IGN)  # the terminal's signals are the engine's to act on
    signal.signal(signal.SIGTERM, on_term)
    _set_death_signal(signal.SIGTERM)
    try:
        if os.getppid() == parent:  # not dead before the death signal was set
            _serve(0, parent, groups)
    except _EngineGone:
        pass
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with contextlib.suppress(OSError):
        _serve(0, parent, groups, wait_s=0)  # registrations sent just before the engine died
    kill_children(groups, run_id)
    return 0


# ---- the engine's side ----


class _Reaper:
    """The engine process's reaper: started on first use, restarted if it died; registrations go down its pipe."""

    def __init__(self) -> None:
        self.run_id = f"{os.getpid()}-{secrets.token_hex(6)}"
        self.process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._groups: set[int] = set()
        self._at_exit = False
        #: The reaper could not be started (no Python to run it): not tried again.
        self._broken = False

    def ensure(self) -> None:
        """Start the reaper unless it runs (before a child is spawned, so the marker is always covered)."""
        with self._lock:
            if self.process is None or self.process.poll() is not None:
                self._start()

    def _start(self) -> None:
        if self._broken:
            return
        env = {k: v for k, v in os.environ.items() if k != MARKER}
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-I", "-S", os.path.abspath(__file__), self.run_id, str(os.getpid())],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                env=env,
                start_new_session=True,  # away from the terminal's signals and from any process-group kill
            )
        except (OSError, ValueError) as e:  # the children still run; only a killed engine would leave them behind
            self._broken = True
            self.process = None
            log.warning("cannot start the reaper (%s): children may outlive a killed engine", e)
            return
        if not self._at_exit:
            atexit.register(self.close)
            self._at_exit = True
        self._send("".join(f"+{g}\n" for g in sorted(self._groups)))

    def _send(self, text: str) -> bool:
        """Write ``text`` to the reaper; False when it is gone (it died, or was never started)."""
        if self.process is None or self.process.stdin is None:
            return False
        if text:
            try:
                os.write(self.process.stdin.fileno(), text.encode())
            except OSError:
                return False
        return True

    def tell(self, sign: str, pgid: int) -> None:
        """Register (``+``) or forget (``-``) a child's process group; a reaper that died is replaced, and the new
        one told every live group."""
        with self._lock:
            if sign == "+":
                self._groups.add(pgid)
            else:
                self._groups.discard(pgid)
            if not self._send(f"{sign}{pgid}\n") and self._groups:
                self._start()

    def close(self, wait_s: float = EXIT_WAIT_S) -> None:
        """The engine's orderly exit: the pipe's EOF lets the reaper sweep up and leave; wait for it (bounded)."""
        with self._lock:
            process, self.process = self.process, None
        if process is None:
            return
        if process.stdin is not None:
            with contextlib.suppress(OSError):
                process.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(wait_s)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None


_reaper = _Reaper()


def reaper_pid() -> int | None:
    """The pid of this process's reaper, if one runs (a test's no-orphan check knows it for what it is)."""
    return _reaper.pid


def child_env(env: Mapping[str, str] | None) -> dict[str, str]:
    """The environment for a new child: ``env`` (None: this process's) with the engine's marker; starts the reaper
    first if it is not running, so the child is covered from its first instruction."""
    _reaper.ensure()
    base = dict(os.environ if env is None else env)
    base[MARKER] = _reaper.run_id
    return base


class ChildGroups(MutableSet[int]):
    """The process groups of the engine's children that are not reaped yet, mirrored to the reaper."""

    def __init__(self) -> None:
        self._groups: set[int] = set()

    def __contains__(self, pgid: object) -> bool:
        return pgid in self._groups

    def __iter__(self) -> Iterator[int]:
        return iter(set(self._groups))

    def __len__(self) -> int:
        return len(self._groups)

    def add(self, pgid: int) -> None:
        if pgid not in self._groups:
            self._groups.add(pgid)
            _reaper.tell("+", pgid)

    def discard(self, pgid: int) -> None:
        if pgid in self._groups:
            self._groups.discard(pgid)
            _reaper.tell("-", pgid)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
