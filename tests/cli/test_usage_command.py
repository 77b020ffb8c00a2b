"""``ava-engine usage [--since]`` through the installed console script, and the usage section of ``export``: calls
recorded by one engine (a text provider's fake reporting its API's usage fields) are summed per provider and
model by another process; a bad ``--since`` exits 2 naming it."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from engine.app import Engine
from engine.cli.common import UsageError
from engine.cli.usage_commands import since_epoch
from engine.config.models import Settings
from engine.recorder.codec import read_recording
from engine.recorder.export import render, summarize
from engine.recorder.files import find_recording

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "fake_providers"))
from fakebase import Reply
from harness import TOOLS, ToolBox
from openai_chat_fake import OpenAIChatFake

ROOT = Path(__file__).resolve().parents[2]
ENTRY_POINT = Path(sys.executable).parent / "ava-engine"
#: 120 tokens in (20 cached) and 30 out per request, at these prices: 200 µ$ a request.
PRICES = {"input_per_mtok": 1.0, "cached_input_per_mtok": 0.5, "output_per_mtok": 3.0}
PER_REQUEST = (100 * 1.0 + 20 * 0.5 + 30 * 3.0) / 1e6


def ava_engine(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT))}
    return subprocess.run([str(ENTRY_POINT), *args], cwd=ROOT, capture_output=True, text=True, timeout=90, env=env)


async def _record_calls(tmp_path: Path, turns: list[int]) -> list[str]:
    """One call per entry of ``turns``, each with that many one-request turns, recorded into tmp_path/recs."""
    fake = OpenAIChatFake([Reply(text=f"Answer {i}.") for i in range(sum(turns))])
    ids: list[str] = []
    async with fake:
        settings = Settings.model_validate(
            {
                "engine": {"http": {"enabled": False}},
                "providers": {
                    "p": {
                        "type": "openai_chat",
                        "model": "m-1",
                        "base_url": fake.base_url,
                        "api_key": "k",
                        "prices": PRICES,
                    }
                },
                "contexts": {"desk": {"provider": "p", "tools": TOOLS}},
                "recording": {"dir": str(tmp_path / "recs")},
            }
        )
        async with Engine(settings, extra_tools=ToolBox().tools()) as engine:
            for n in turns:
                call = await engine.start_call("desk")
                for i in range(n):
                    await engine.user_said(call.call_id, f"question {i}")
                await engine.end_call(call.call_id)
                ids.append(call.call_id)
    assert fake.errors == []
    return ids


def _cli_config(tmp_path: Path) -> str:
    script = tmp_path / "script.yaml"
    script.write_text(yaml.safe_dump({"greeting": "hi", "intents": [], "fallback": "what?"}))
    cfg = {
        "providers": {"s": {"type": "scripted", "script": str(script)}},
        "contexts": {"c": {"provider": "s"}},
        "recording": {"dir": "recs"},  # relative to the config file: the engine above wrote there
    }
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return str(path)


async def test_usage_sums_the_recordings_and_export_shows_each_turn(tmp_path: Path) -> None:
    ids = await _record_calls(tmp_path, [2, 1])
    rec = read_recording(find_recording(tmp_path / "recs", ids[0]) or tmp_path)
    s = summarize(rec)["usage"]
    assert [t["turn"] for t in s["turns"]] == [1, 2] and s["total"]["input_tokens"] == 240
    assert abs(s["cost"] - 2 * PER_REQUEST) < 1e-12 and s["model"] == "m-1"
    md = render(rec, "md")
    assert "## Usage" in md and "240 tokens in (40 cached, 0 audio), 60 out" in md and "| 2 | 120 | 20 | 30 |" in md

    cfg = _cli_config(tmp_path)
    out = ava_engine("--config", cfg, "usage", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert (doc["calls"], doc["calls_with_usage"], doc["unreadable"]) == (2, 2, 0)
    assert doc["total"]["input_tokens"] == 360 and doc["total"]["output_tokens"] == 90
    assert abs(doc["total"]["cost"] - 3 * PER_REQUEST) < 1e-12
    (row,) = doc["by_provider"]
    assert (row["provider"], row["model"], row["calls"], row["usage"]["cached_input_tokens"]) == ("p", "m-1", 2, 60)

    recent = ava_engine("--config", cfg, "usage", "--since", "1h")  # the table, of calls of the last hour
    assert recent.returncode == 0 and recent.stdout.startswith("2 recorded call(s) since ")
    assert "m-1" in recent.stdout and f"{3 * PER_REQUEST:.4f}" in recent.stdout

    bad = ava_engine("--config", cfg, "usage", "--since", "last tuesday", "--json")
    assert bad.returncode == 2 and "--since 'last tuesday'" in bad.stdout + bad.stderr


def test_since_takes_dates_and_ages() -> None:
    now = 1_800_000_000.0
    assert since_epoch("90m", now) == now - 5400 and since_epoch("7d", now) == now - 7 * 86400
    assert since_epoch("2026-11-01", now) == datetime.datetime(2026, 11, 1).timestamp()
    with pytest.raises(UsageError, match="--since '7 days'"):
        since_epoch("7 days", now)
