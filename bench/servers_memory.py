"""Memory of the demo's built-in MCP servers: separate children, one bundle child, in-process.

Why it exists: issue #13 asks for the leanest way to run the built-in servers that still keeps a crashing tool
from taking the console down. This starts ``ava-engine serve`` (the engine side of the console) on the demo
config rewritten four ways — every built-in server a stdio child of its own (``separate``), all of them in one
``bundled`` child, all ``inprocess``, and none at all (``none``: the engine alone) — waits for ``/ready``, and
sums VmRSS over the engine's process tree (the engine plus every descendant), several rounds in rotating order.
It prints the median per mode and the ratio to ``separate``. The config's HTTP port is replaced by a free one so
runs never collide. The engine is this checkout's (run the script from a git worktree to measure older code).

Run: ``.venv/bin/python bench/servers_memory.py [--rounds N] [--modes none,separate,bundled,inprocess]``.
The modes a checkout does not support (an older tree without ``bundled``) are reported and skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

#: The built-in servers of the demo config and the module:attribute that builds each (for the two lean modes).
TARGETS = {
    "dice": "engine.servers.dice.server:create",
    "aviation_atis": "engine.servers.aviation_atis.server:create",
    "memory": "engine.servers.memory.server:create",
    "rules": "engine.servers.rules.server:create",
    "file_io": "engine.servers.file_io.server:create",
}


_ENTRY = "import sys; from engine.cli import main; sys.exit(main())"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def demo_config(mode: str, port: int, db: Path) -> dict[str, Any]:
    """config/default.yaml with its built-in servers run the way ``mode`` says."""
    cfg: dict[str, Any] = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())
    cfg["engine"]["http"]["port"] = port
    cfg["providers"]["demo_script"]["script"] = str(ROOT / "config" / "scripts" / "demo.yaml")
    if mode == "none":  # the engine alone: what the built-in servers add is measured against this
        cfg["mcp"]["servers"] = {}
        cfg["contexts"]["demo"]["tools"] = ["hangup_call"]
        return cfg
    for sid, server in cfg["mcp"]["servers"].items():
        if sid not in TARGETS:
            continue
        args = _args_of(server)
        if sid == "memory":
            args = [*args, "--db", str(db)]
        for key in ("command", "transport", "target", "args"):
            server.pop(key, None)
        if mode == "separate":
            server["command"] = ["{python}", "-m", f"engine.servers.{sid}", *args]
        else:
            server.update({"transport": mode, "target": TARGETS[sid]})
            if args:
                server["args"] = args
    return cfg


def _args_of(server: dict[str, Any]) -> list[str]:
    if "command" in server:
        return [str(a) for a in server["command"][3:]]  # ["{python}", "-m", "engine.servers.X", *args]
    return [str(a) for a in server.get("args", [])]


def tree_rss_kb(pid: int) -> tuple[int, int]:
    """(sum of VmRSS in kB over ``pid`` and all its descendants, number of processes)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    total, count, todo = 0, 0, [pid]
    while todo:
        p = todo.pop()
        todo.extend(children.get(p, []))
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
                    count += 1
        except OSError:
            continue
    return total, count


def wait_ready(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 60.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"ava-engine serve exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/ready", timeout=2) as r:
                if r.status == 200:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/mcp/status", timeout=2) as s:
                        status: dict[str, Any] = json.loads(s.read())
                        return status
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        time.sleep(0.1)
    raise RuntimeError("the engine was not ready in time")


def measure(mode: str, settle_s: float) -> tuple[int, int, list[str]]:
    """(tree RSS in kB, process count, servers not up) for one start of the engine in ``mode``."""
    port = free_port()
    with tempfile.TemporaryDirectory(prefix="ava-mem-") as tmp:
        path = Path(tmp) / "config.yaml"
        path.write_text(yaml.safe_dump(demo_config(mode, port, Path(tmp) / "memory.sqlite3")))
        # ava-engine of THIS checkout (``-c`` puts the working directory first on sys.path), so a git worktree of
        # the code before a change measures that code.
        proc = subprocess.Popen(
            [sys.executable, "-c", _ENTRY, "serve", "--no-watch", "--config", str(path)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            status = wait_ready(port, proc)
            time.sleep(settle_s)
            servers = status.get("servers", [])
            down = [f"{s['id']}={s['state']}" for s in servers if s.get("state") != "up"]
            rss, count = tree_rss_kb(proc.pid)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    return rss, count, down


def supported(mode: str) -> bool:
    if mode in ("none", "separate"):
        return True
    try:
        from engine.config.models import McpServerConfig

        McpServerConfig.model_validate({"transport": mode, "target": TARGETS["dice"]})
        __import__("engine.servers.dice.server", fromlist=["create"]).create  # noqa: B018
    except Exception:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--modes", default="none,separate,bundled,inprocess")
    parser.add_argument("--settle", type=float, default=1.0, help="seconds to wait after ready before measuring")
    opts = parser.parse_args()
    modes = [m for m in opts.modes.split(",") if m]
    skipped = [m for m in modes if not supported(m)]
    modes = [m for m in modes if m not in skipped]
    if skipped:
        print(f"not supported by this checkout, skipped: {', '.join(skipped)}")
    results: dict[str, list[tuple[int, int]]] = {m: [] for m in modes}
    for r in range(opts.rounds):
        order = modes[r % len(modes) :] + modes[: r % len(modes)]
        for mode in order:
            rss, count, down = measure(mode, opts.settle)
            note = f"  NOT UP: {', '.join(down)}" if down else ""
            print(f"round {r + 1} {mode:10s} {rss / 1024:7.1f} MB in {count} processes{note}", flush=True)
            results[mode].append((rss, count))
    print()
    print(f"{'mode':10s} {'median MB':>10s} {'processes':>10s} {'vs separate':>12s}")
    base = statistics.median(r for r, _ in results["separate"]) if results.get("separate") else None
    for mode, runs in results.items():
        med = statistics.median(r for r, _ in runs)
        procs = max(c for _, c in runs)
        ratio = f"{med / base:.2f}x" if base else "-"
        print(f"{mode:10s} {med / 1024:10.1f} {procs:10d} {ratio:>12s}")


if __name__ == "__main__":
    main()
