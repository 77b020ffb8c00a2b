"""``ava-engine check`` builds an ``openai_realtime`` provider from YAML as a user writes it (the installed entry
point in a child process): the config contract of issue #14 is accepted, and a bad option is refused naming it."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[4]
ENTRY = ROOT / ".venv" / "bin" / "ava-engine"
KEY = "sk-rt-cli-SECRET-7781"

CONFIG = """
engine:
  http: {{enabled: false}}
providers:
  oai:
    type: openai_realtime
    model: gpt-realtime
    voice: marin
    api_key: ${{RT_CLI_KEY}}
    base_url: ws://127.0.0.1:9/v1/realtime
    options:
{options}
contexts:
  desk: {{provider: oai, greeting: "Hello."}}
"""


def _check(tmp_path: Path, options: str) -> subprocess.CompletedProcess[str]:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(CONFIG.format(options=options), encoding="utf-8")
    return subprocess.run(
        [str(ENTRY), "--config", str(cfg), "check", "--json"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        env={**os.environ, "RT_CLI_KEY": KEY},
    )


def test_check_accepts_the_config_contract(tmp_path: Path) -> None:
    p = _check(tmp_path, "      turn_detection: {silence_duration_ms: 700}\n      transcription: false")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["providers"] == ["oai"]
    assert KEY not in p.stdout + p.stderr


def test_check_refuses_a_bad_option_naming_it(tmp_path: Path) -> None:
    p = _check(tmp_path, "      turn_detection: {treshold: 0.4}")
    assert p.returncode != 0
    err = json.loads(p.stdout)["error"]
    assert "providers.oai.options.turn_detection.treshold: unknown" in err
    assert KEY not in p.stdout + p.stderr
