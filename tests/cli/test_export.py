"""``ava-engine export`` and ``ava-engine recordings`` through the installed console script: a call recorded by one
process is exported by another, as Markdown and JSON, to stdout or a file; missing calls and bad arguments exit 1/2
with the reason."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT = Path(sys.executable).parent / "ava-engine"


def ava_engine(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT))}
    return subprocess.run([str(ENTRY_POINT), *args], cwd=cwd, capture_output=True, text=True, timeout=90, env=env)


def _config(tmp_path: Path) -> Path:
    demo = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())
    demo["recording"] = {"dir": "recs"}  # relative to the config's folder
    for prov in demo.get("providers", {}).values():  # the demo's script is relative to config/
        if "script" in prov:
            prov["script"] = str((ROOT / "config" / prov["script"]).resolve())
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(demo))
    return path


def test_export_a_call_recorded_by_another_process(tmp_path: Path) -> None:
    cfg = str(_config(tmp_path))
    call = ava_engine("--config", cfg, "call", "--context", "demo", "--say", "roll a d20", "--say", "goodbye", "--json")
    assert call.returncode == 0, call.stderr
    call_id = json.loads(call.stdout.splitlines()[0])["call_id"]
    assert list((tmp_path / "recs").glob(f"*-{call_id}.jsonl"))

    md = ava_engine("--config", cfg, "export", call_id)
    assert md.returncode == 0, md.stderr
    assert md.stdout.startswith(f"# Call {call_id}\n")
    assert "**user:** roll a d20" in md.stdout and "| mcp_dice_roll | dice | success |" in md.stdout

    js = ava_engine("--config", cfg, "export", call_id, "--format", "json")
    assert js.returncode == 0, js.stderr
    doc = json.loads(js.stdout)
    assert doc["call_id"] == call_id and doc["context"] == "demo" and doc["end_reason"] == "hangup"
    assert [t["exposed_name"] for t in doc["tools"]] == ["mcp_dice_roll", "hangup_call"]
    assert [t["role"] for t in doc["transcript"]] == ["assistant", "user", "assistant", "user", "assistant"]

    out = tmp_path / "call.md"
    to_file = ava_engine("--config", cfg, "export", call_id, "-f", "md", "-o", str(out), "--json")
    assert to_file.returncode == 0, to_file.stderr
    assert json.loads(to_file.stdout)["output"] == str(out) and out.read_text() == md.stdout

    by_path = ava_engine("--config", cfg, "export", str(next((tmp_path / "recs").glob("*.jsonl"))))
    assert by_path.stdout == md.stdout

    listing = ava_engine("--config", cfg, "recordings", "--json")
    assert [r["call_id"] for r in json.loads(listing.stdout)["recordings"]] == [call_id]


def test_export_errors_say_what_and_where(tmp_path: Path) -> None:
    cfg = str(_config(tmp_path))
    missing = ava_engine("--config", cfg, "export", "call-77")
    assert missing.returncode == 1
    assert "no recording of call 'call-77' in" in missing.stderr and "recs" in missing.stderr
    no_file = ava_engine("--config", cfg, "export", str(tmp_path / "nope.jsonl"))
    assert no_file.returncode == 1 and "there is no recording file" in no_file.stderr
    bad = ava_engine("--config", cfg, "export", "call-1", "--format", "pdf")
    assert bad.returncode == 2 and "invalid choice: 'pdf'" in bad.stderr
    junk = tmp_path / "junk.jsonl"
    junk.write_text("not json\n")
    j = ava_engine("--config", cfg, "export", str(junk), "--json")
    assert j.returncode == 1 and "holds no recorded events" in json.loads(j.stdout or j.stderr)["error"]
