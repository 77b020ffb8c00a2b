"""``ava-engine mcp call`` (the installed command) with bad arguments: named errors, never a traceback, nothing run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
ENTRY = ROOT / ".venv" / "bin" / "ava-engine"
RECORDING_SERVER = ROOT / "tests" / "fixtures" / "mcp_servers" / "recording_server.py"


@pytest.fixture
def config(tmp_path: Path) -> tuple[Path, Path]:
    record = tmp_path / "calls.jsonl"
    record.touch()
    cfg = tmp_path / "config.yaml"
    cfg.write_text(
        "engine:\n  http: {enabled: false}\n  tool_arguments: {max_depth: 32}\n"
        "mcp:\n  servers:\n    rec:\n"
        f"      command: [{json.dumps(sys.executable)}, {json.dumps(str(RECORDING_SERVER))},"
        f" --record, {json.dumps(str(record))}]\n"
    )
    return cfg, record


def mcp_call(cfg: Path, name: str, args: str) -> tuple[int, dict[str, object], str]:
    p = subprocess.run(
        [str(ENTRY), "--config", str(cfg), "mcp", "call", name, "--args", args, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert "Traceback" not in p.stderr, p.stderr[-2000:]
    return p.returncode, json.loads(p.stdout), p.stderr


@pytest.mark.parametrize("levels", [1_000, 20_000])
def test_deeply_nested_args_are_a_named_error(config: tuple[Path, Path], levels: int) -> None:
    cfg, record = config
    deep = '{"a": ' * 100 + "[" * levels + "]" * levels + "}" * 100  # one argv string holds at most 128 KiB
    code, out, _ = mcp_call(cfg, "mcp_rec_record", '{"text": "a", "data": ' + deep + "}")
    assert code == 2
    assert "--args: nested more than 32 levels deep (limit 32)" in str(out["error"])
    assert record.read_text() == ""


def test_bad_values_are_rejected_by_the_engine_and_never_reach_the_server(config: tuple[Path, Path]) -> None:
    cfg, record = config
    code, out, _ = mcp_call(cfg, "mcp_rec_record", '{"text": 5, "count": "x"}')
    assert code == 1 and out["status"] == "rejected"
    assert str(out["message"]).startswith("invalid arguments for mcp_rec_record: ")
    assert "count" in str(out["message"]) and "text" in str(out["message"])
    code, out, _ = mcp_call(cfg, "mcp_rec_record", '{"text": NaN}')
    assert code == 2 and "NaN is not a JSON number" in str(out["error"])
    assert record.read_text() == ""
    code, out, _ = mcp_call(cfg, "mcp_rec_record", '{"text": "fine"}')
    assert code == 0 and out["status"] == "success" and record.read_text().count("\n") == 1


def test_a_huge_unknown_name_is_clipped_in_the_error(config: tuple[Path, Path]) -> None:
    cfg, _ = config
    code, out, _ = mcp_call(cfg, "x" * 100_000, "{}")
    assert code == 2 and "(100,000 characters)" in str(out["error"]) and len(str(out["error"])) < 2_000
