"""Atomic save survives SIGKILL at random moments: the file is always the old or the new version, whole."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from engine.config import ConfigDocument, load_settings

SERVERS = 40


def _big_config() -> str:
    lines = ["# a big config (generated)", "engine:", "  tool_timeout_ms: 1000", "mcp:", "  servers:"]
    for i in range(SERVERS):
        lines += [
            f"    s{i}:  # server {i}",
            f"      command: [python, -m, srv{i}, --flag, '{'x' * 80}']",
            "      restart:",
            f"        backoff_ms: {100 + i}",
            "      tools:",
        ]
        lines += [f"        - name: tool_{j}\n          description: '{'d' * 60}'" for j in range(3)]
    return "\n".join(lines) + "\n"


SAVER = textwrap.dedent(
    """
    import sys
    from engine.config import ConfigDocument
    path = sys.argv[1]
    doc = ConfigDocument.load(path)
    i = 0
    while True:
        doc.set(("engine", "tool_timeout_ms"), 1000 + (i % 2))
        doc.save(validate=(i % 4 == 0), env={}, lookup_secret=lambda n: "unused")
        if i == 1:
            print("saving", flush=True)
        i += 1
    """
)


@pytest.mark.timeout(60)
def test_kill_during_save_never_leaves_a_torn_file(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    old = _big_config()
    path.write_text(old)
    new = old.replace("tool_timeout_ms: 1000", "tool_timeout_ms: 1001")
    assert ConfigDocument.load(path).text() == old  # a no-op round trip is byte-identical
    rng = random.Random(1234)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])}
    for _ in range(5):
        proc = subprocess.Popen(
            [sys.executable, "-c", SAVER, str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline()
            assert line == b"saving\n", proc.stderr.read().decode() if proc.stderr else ""
            time.sleep(rng.uniform(0.0, 0.3))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            for stream in (proc.stdout, proc.stderr):
                if stream is not None:
                    stream.close()
        assert proc.returncode == -signal.SIGKILL
        content = path.read_text()
        assert content in (old, new)
        backup = Path(f"{path}.bak").read_text()
        assert backup in (old, new)
        settings = load_settings(path, env={})
        assert settings.engine.tool_timeout_ms in (1000, 1001)
        assert len(settings.mcp.servers) == SERVERS
        for leftover in tmp_path.glob(".config.yaml.*.tmp"):  # a kill between mkstemp and rename
            leftover.unlink()
