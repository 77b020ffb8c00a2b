"""Console start-up as a user sees it: first paint of ``ava-console`` against a bare Textual app, servers up, RSS.

Why it exists: the console used to build the engine (and import the MCP SDK, aiohttp …) before its first frame,
so it took seconds to show anything. This bench runs the real ``ava-console --config CONFIG`` as a subprocess in a
pseudo-terminal, exactly what a user starts, and a bare Textual app (a Header and a Footer) the same way, in
rounds with alternating order, and measures from the spawn:

- **first paint**: the first time the app's header title (``ava-console`` / ``bare-textual``) appears in what the
  app writes to the terminal. Textual writes a whole frame at once, so that is the first full-screen paint.
- **CPU to first paint**: the app's user + system CPU time (``/proc/<pid>/stat``, 10 ms ticks) when its first
  paint is read. On a shared, loaded machine wall times swing with the load; the CPU an app spends to get its
  first frame out barely does, so its ratio to the bare app's is the steadier signal.
- **whole screen** (console only): the first time the text "Tools shown" (the call detail, which the Calls screen
  mounts right after its first frame) appears.
- **all demo servers up** (console only): the console serves the engine's HTTP API; the bench polls
  ``GET /mcp/status`` until every enabled server of the config reports ``state: up``. This is stricter than
  ``/ready``, which also counts a server that failed. The config is copied beside the original (so its relative
  paths still resolve) with ``engine.http.port`` set to a free port, so parallel runs don't collide.
- **RSS**: once all servers are up, ``VmRSS`` summed over the console process and all its descendants
  (``/proc/<pid>/status``), and the console's own share.

Then it presses ctrl+q (the app quits, the console stops its servers) and waits for the exit. Prints medians,
ranges and ratios; asserts nothing. Goals: first paint ≤ 0.5 s and ≤ 1.5× the bare app; RSS ≤ 150 MB.

Bytecode: the apps run without ``PYTHONDONTWRITEBYTECODE`` (the warm-up round writes ``__pycache__``), as a user's
console does from its second start on (an installed wheel has bytecode from the start). With it set, every start
compiles the console's two dozen modules from source while Textual's come precompiled from site-packages: about
0.1 s the bare app never pays. ``--no-bytecode`` keeps the variable, to see that cost.

``--compare DIR`` also runs the console of another checkout (e.g. a git worktree of the code before a change, with
its own copy of the config) in the same rounds, so before and after share the machine's load.

    .venv/bin/python bench/console_start.py [--config config/default.yaml] [--rounds 5] [--size 120x40]
                                            [--compare /tmp/wt-old]
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import select
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import termios
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]

BARE_APP = """
from textual.app import App, ComposeResult
from textual.widgets import Footer, Header


class Bare(App[None]):
    TITLE = "bare-textual"

    def compose(self) -> ComposeResult:
        yield Header()
        yield Footer()


Bare().run()
"""

CTRL_Q = b"\x11"


@dataclass
class PtyRun:
    """One app in a pseudo-terminal: its process, and a thread draining (and searching) its output."""

    proc: subprocess.Popen[bytes]
    master: int
    t0: float
    marker: bytes
    #: Text of the last part of the screen to be drawn (the Calls screen mounts its detail after the first frame).
    complete_marker: bytes
    painted_at: float | None = None
    #: The app's CPU seconds when its first paint was read.
    painted_cpu: float | None = None
    complete_at: float | None = None
    seen: bytearray = field(default_factory=bytearray)
    done: threading.Event = field(default_factory=threading.Event)
    complete: threading.Event = field(default_factory=threading.Event)

    def drain(self) -> None:
        """Read until the app closes the terminal; the first time ``marker`` shows up is the first paint, the first
        time ``complete_marker`` does (at or after it) is the whole screen."""
        tail = b""
        keep = max(len(self.marker), len(self.complete_marker))
        while True:
            try:
                ready, _, _ = select.select([self.master], [], [], 0.2)
                if not ready:
                    if self.proc.poll() is not None:
                        break
                    continue
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the app exited and the slave side is closed
                break
            if not chunk:
                break
            now = time.perf_counter()
            if self.complete_at is None:
                if self.painted_at is None and self.marker in tail + chunk:
                    self.painted_at = now
                    self.painted_cpu = cpu_s(self.proc.pid)
                    self.done.set()
                if self.painted_at is not None and self.complete_marker in tail + chunk:
                    self.complete_at = now
                    self.complete.set()
                tail = (tail + chunk)[-keep:]
                if len(self.seen) < 200_000:
                    self.seen += chunk
        self.done.set()
        self.complete.set()

    def first_paint_s(self, timeout: float) -> float:
        self.done.wait(timeout)
        if self.painted_at is None:
            text = self.seen.decode(errors="replace")[-2000:]
            raise RuntimeError(f"{self.proc.args!r}: no first paint within {timeout}s; output tail:\n{text}")
        return self.painted_at - self.t0

    def complete_s(self, timeout: float) -> float | None:
        self.complete.wait(timeout)
        return self.complete_at - self.t0 if self.complete_at is not None else None

    def quit(self, timeout: float = 15.0) -> int:
        try:
            os.write(self.master, CTRL_Q)
        except OSError:
            pass
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait()
        finally:
            try:
                os.close(self.master)
            except OSError:
                pass


def spawn(
    argv: list[str], marker: str, cols: int, rows: int, env: dict[str, str], complete_marker: str | None = None
) -> PtyRun:
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=ROOT, start_new_session=True, close_fds=True
    )
    os.close(slave)
    run = PtyRun(proc, master, t0, marker.encode(), (complete_marker or marker).encode())
    threading.Thread(target=run.drain, daemon=True).start()
    return run


def cpu_s(pid: int) -> float | None:
    """User + system CPU seconds of ``pid`` so far, all its threads (``/proc/<pid>/stat``); None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime


def tree_rss_kb(pid: int) -> tuple[int, int, int]:
    """(VmRSS of ``pid`` and every descendant, of ``pid`` alone, number of processes) in kB."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    total = own = count = 0
    todo = [pid]
    while todo:
        p = todo.pop()
        rss = vm_rss_kb(p)
        if p == pid:
            own = rss
        total += rss
        count += 1
        todo.extend(children.get(p, ()))
    return total, own, count


def vm_rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def bench_config(config: Path, port: int) -> tuple[Path, list[str]]:
    """A copy of ``config`` beside it with the HTTP API on ``port``, and the ids of its enabled MCP servers."""
    data: dict[str, Any] = yaml.safe_load(config.read_text()) or {}
    http = data.setdefault("engine", {}).setdefault("http", {})
    http["enabled"], http["host"], http["port"] = True, "127.0.0.1", port
    http.pop("auth_token", None)
    mcp = data.get("mcp") or {}
    servers = mcp.get("servers") or {} if mcp.get("enabled", True) else {}
    ids = [sid for sid, cfg in servers.items() if (cfg or {}).get("enabled", True)]
    fd, name = tempfile.mkstemp(prefix=".bench-console-start-", suffix=".yaml", dir=config.parent)
    with os.fdopen(fd, "w") as f:
        yaml.safe_dump(data, f, sort_keys=False)
    return Path(name), ids


def servers_up_s(run: PtyRun, port: int, ids: list[str], timeout: float) -> float | None:
    """Seconds from the spawn until ``/mcp/status`` shows every server in ``ids`` up (None on timeout)."""
    url = f"http://127.0.0.1:{port}/mcp/status"
    deadline = time.perf_counter() + timeout
    while time.perf_counter() < deadline and run.proc.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=1.0) as r:
                status = json.load(r)
            states = {s["id"]: s["state"] for s in status.get("servers", [])}
            if all(states.get(i) == "up" for i in ids):
                return time.perf_counter() - run.t0
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.01)
    return None


@dataclass
class ConsoleRound:
    paint_s: float
    cpu_s: float | None
    complete_s: float | None
    up_s: float | None
    rss_kb: int
    own_kb: int
    procs: int
    exit_code: int


def run_console(config: Path, port: int, ids: list[str], cols: int, rows: int, env: dict[str, str]) -> ConsoleRound:
    exe = str(Path(sys.executable).parent / "ava-console")  # the installed entry point; PYTHONPATH picks the checkout
    run = spawn([exe, "--config", str(config)], "ava-console", cols, rows, env, complete_marker="Tools shown")
    try:
        paint = run.first_paint_s(60)
        complete = run.complete_s(60)
        up = servers_up_s(run, port, ids, 120)
        time.sleep(0.3)  # let the last server's first requests settle
        rss, own, procs = tree_rss_kb(run.proc.pid)
    finally:
        code = run.quit()
    return ConsoleRound(paint, run.painted_cpu, complete, up, rss, own, procs, code)


@dataclass
class BareRound:
    paint_s: float
    cpu_s: float | None
    rss_kb: int
    exit_code: int


def run_bare(cols: int, rows: int, env: dict[str, str]) -> BareRound:
    run = spawn([sys.executable, "-c", BARE_APP], "bare-textual", cols, rows, env)
    try:
        paint = run.first_paint_s(60)
        time.sleep(0.3)
        rss = vm_rss_kb(run.proc.pid)
    finally:
        code = run.quit()
    return BareRound(paint, run.painted_cpu, rss, code)


def med(values: list[float]) -> float:
    return statistics.median(values)


def spread(values: list[float], unit: str = "s") -> str:
    """``median [min–max]``: on a shared machine the range says as much as the median."""
    return f"{med(values):.3f}{unit} [{min(values):.3f}–{max(values):.3f}]"


def cpus(rounds: list[ConsoleRound] | list[BareRound]) -> list[float]:
    return [r.cpu_s for r in rounds if r.cpu_s is not None]


@dataclass
class Checkout:
    """One console under test: its source tree, its config copy, port and server ids, and its rounds."""

    name: str
    root: Path
    config: Path
    port: int
    ids: list[str]
    env: dict[str, str]
    rounds: list[ConsoleRound] = field(default_factory=list)


def checkout(name: str, root: Path, config_arg: str, env: dict[str, str]) -> Checkout:
    config = Path(config_arg) if Path(config_arg).is_absolute() else (root / config_arg).resolve()
    port = free_port()
    cfg, ids = bench_config(config, port)
    own = dict(env)
    own["PYTHONPATH"] = os.pathsep.join([str(root), *filter(None, [os.environ.get("PYTHONPATH")])])
    return Checkout(name, root, cfg, port, ids, own)


def report(c: Checkout, bare: list[BareRound]) -> None:
    paint_b = med([r.paint_s for r in bare])
    paints = [r.paint_s for r in c.rounds]
    paint_c = med(paints)
    ups = [r.up_s for r in c.rounds if r.up_s is not None]
    # each console round against the bare app's round next to it (same load)
    ratios = [r.paint_s / b.paint_s for r, b in zip(c.rounds, bare, strict=False)]
    print(f"{c.name} ({c.root})")
    print(
        f"  first paint   {spread(paints)}   bare Textual {paint_b:.3f}s   ratio {paint_c / paint_b:.2f}x "
        f"(per round {min(ratios):.2f}–{max(ratios):.2f}x)"
    )
    cpu_c, cpu_b = cpus(c.rounds), cpus(bare)
    if cpu_c and cpu_b:
        print(
            f"  CPU to paint  {spread(cpu_c)}   bare Textual {med(cpu_b):.3f}s   ratio {med(cpu_c) / med(cpu_b):.2f}x"
        )
    completes = [r.complete_s for r in c.rounds if r.complete_s is not None]
    if completes:
        whole = med(completes)
        print(f"  whole screen  {whole:.3f}s (the call detail drawn)   ratio {whole / paint_b:.2f}x")
    if ups:
        print(
            f"  servers up    {med(ups):.3f}s after the spawn ({len(ups)}/{len(c.rounds)} rounds; /mcp/status all up)"
        )
    else:
        print("  servers up    never (see /mcp/status of the config)")
    rss_c = med([r.rss_kb / 1024 for r in c.rounds])
    own_c = med([r.own_kb / 1024 for r in c.rounds])
    procs = max(r.procs for r in c.rounds)
    print(
        f"  RSS           console + children {rss_c:.0f} MB over {procs} processes "
        f"(console {own_c:.0f} MB, children {rss_c - own_c:.0f} MB)"
    )


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--config", default="config/default.yaml", help="the console's config (default: the demo)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--size", default="120x40", help="terminal COLSxROWS (default 120x40)")
    p.add_argument("--compare", metavar="DIR", help="also run the console of this checkout, in the same rounds")
    p.add_argument(
        "--no-bytecode", action="store_true", help="keep PYTHONDONTWRITEBYTECODE (the console compiles its source)"
    )
    args = p.parse_args(argv)
    cols, rows = (int(x) for x in args.size.lower().split("x"))
    env = dict(os.environ)
    env.update(TERM="xterm-256color", COLORTERM="truecolor", COLUMNS=str(cols), LINES=str(rows))
    for k in ("TEXTUAL", "TEXTUAL_DEVTOOLS_PORT", "NO_COLOR"):
        env.pop(k, None)
    if not args.no_bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as a user's console runs: from bytecode after its first start
    consoles = [checkout("ava-console", ROOT, args.config, env)]
    if args.compare:
        consoles.append(checkout("ava-console (compare)", Path(args.compare).resolve(), args.config, env))
    bare: list[BareRound] = []
    try:
        for c in consoles:
            print(f"{c.name}: {c.root}, config {args.config} ({len(c.ids)} MCP servers: {', '.join(c.ids)})")
        pyc = "compiled from source each start" if "PYTHONDONTWRITEBYTECODE" in env else "bytecode cached"
        print(f"terminal {cols}x{rows}, {args.rounds} rounds, order rotating each round, {pyc}")
        run_bare(cols, rows, env)  # warm the file cache for every app before measuring
        for c in consoles:
            run_console(c.config, c.port, c.ids, cols, rows, c.env)
        apps: list[Checkout | None] = [None, *consoles]
        for i in range(args.rounds):
            order = apps[i % len(apps) :] + apps[: i % len(apps)]
            for app in order:
                if app is None:
                    b = run_bare(cols, rows, env)
                    bare.append(b)
                    print(
                        f"  round {i + 1} bare Textual: first paint {b.paint_s:.3f}s (CPU {b.cpu_s}s), "
                        f"RSS {b.rss_kb / 1024:.0f} MB, exit {b.exit_code}"
                    )
                    continue
                r = run_console(app.config, app.port, app.ids, cols, rows, app.env)
                app.rounds.append(r)
                up = f"{r.up_s:.3f}s" if r.up_s is not None else "timeout"
                print(
                    f"  round {i + 1} {app.name}: first paint {r.paint_s:.3f}s (CPU {r.cpu_s}s), whole screen "
                    f"{r.complete_s or float('nan'):.3f}s, servers up {up}, "
                    f"RSS {r.rss_kb / 1024:.0f} MB over {r.procs} processes (console {r.own_kb / 1024:.0f} MB), "
                    f"exit {r.exit_code}"
                )
    finally:
        for c in consoles:
            c.config.unlink(missing_ok=True)
    print()
    print(
        f"bare Textual (Header + Footer): first paint {spread([b.paint_s for b in bare])}, "
        f"CPU {spread(cpus(bare))}, RSS {med([b.rss_kb / 1024 for b in bare]):.0f} MB"
    )
    for c in consoles:
        report(c, bare)
    if len(consoles) == 2:
        now, then = (med([r.paint_s for r in c.rounds]) for c in consoles)
        print(f"first paint, this checkout against the compared one: {now:.3f}s / {then:.3f}s = {now / then:.2f}x")
    print("goals: first paint ≤ 0.5 s and ≤ 1.5x bare Textual; RSS of console + children ≤ 150 MB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
