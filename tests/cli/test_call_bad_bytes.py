"""``ava-engine call --json`` with invalid UTF-8 on its command line (Python keeps it as lone surrogates): the text
is made valid where it enters, so every line printed is valid JSON in valid UTF-8 and the call exits 0. It exited
1 with half its events printed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / ".venv" / "bin" / "ava-engine"


def test_a_call_with_invalid_utf8_arguments_prints_valid_json_lines_and_exits_0() -> None:
    argv = [
        os.fsencode(ENGINE),
        b"--config",
        b"config/default.yaml",
        b"call",
        b"--context",
        b"demo",
        b"--caller-name",
        b"Ann \xc3",
        b"--say",
        b"\xff\xfe",  # not UTF-8 at all
        b"--say",
        b"echo \xed\xa0\x80 please",  # U+D800 as a careless encoder writes it (a lone surrogate)
        b"--say",
        b"goodbye",
        b"--json",
    ]
    p = subprocess.run(argv, cwd=ROOT, capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    lines = p.stdout.decode("utf-8").splitlines()  # strict: every byte printed is UTF-8
    events = [json.loads(line) for line in lines]
    types = [e["type"] for e in events]
    assert types[0] == "call.started" and types[-1] == "call.ended"
    assert events[0]["caller_name"] == "Ann \ufffd"
    said = [e["text"] for e in events if e["type"] == "transcript.added" and e["role"] == "user"]
    assert said == ["\ufffd\ufffd", "echo \ufffd\ufffd\ufffd please", "goodbye"]
