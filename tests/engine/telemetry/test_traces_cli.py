"""``ava-engine call`` through the installed entry point with the standard OTEL_* variables: its spans reach a real
OTLP/HTTP receiver before the process exits, with no caller's words or tool arguments in them, and the call's trace
id is in its recording and its export. Tracing asked for without the SDK installed is a clear error naming the
``otel`` extra."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import yaml

from tests.engine.telemetry.otlp_receiver import otlp_receiver

ROOT = Path(__file__).resolve().parents[3]
ENTRY_POINT = Path(sys.executable).parent / "ava-engine"
CANARY = "Zqx7canary"


def _config(tmp_path: Path) -> Path:
    demo = yaml.safe_load((ROOT / "config" / "default.yaml").read_text())
    demo["recording"] = {"dir": "recs"}
    for prov in demo.get("providers", {}).values():
        if "script" in prov:
            prov["script"] = str((ROOT / "config" / prov["script"]).resolve())
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(demo))
    return path


async def _ava_engine(*args: str, env: dict[str, str]) -> tuple[int, str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    proc = await asyncio.create_subprocess_exec(
        str(ENTRY_POINT),
        *args,
        cwd=ROOT,
        env={**clean, **env},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_ava_engine_call_exports_its_trace_before_it_exits(tmp_path: Path) -> None:
    cfg = str(_config(tmp_path))
    async with otlp_receiver() as rx:
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": rx.url, "OTEL_SERVICE_NAME": "ava-cli-test"}
        rc, out, err = await _ava_engine(
            "--config",
            cfg,
            "call",
            "--context",
            "demo",
            "--caller-name",
            CANARY,
            "--say",
            "roll 2d6",
            "--say",
            f"roll {CANARY}",
            "--say",
            "goodbye",
            "--json",
            env=env,
        )
        assert rc == 0, err
        call_id = json.loads(out.splitlines()[0])["call_id"]
        call = rx.one("call")  # already here: the process flushed its spans before it exited
        assert call.service == "ava-cli-test" and call.attributes["ava.call.id"] == call_id
        turns = [s for s in rx.children(call) if s.name == "turn"]
        assert [t.attributes["ava.turn"] for t in turns] == [1, 2, 3]
        first = [s.name for s in rx.children(turns[0])]
        assert first == ["model", "execute_tool mcp_dice_roll"]
        tool = rx.named("execute_tool mcp_dice_roll")[0]
        assert tool.attributes["ava.tool.server"] == "dice" and tool.attributes["ava.tool.latency_class"] in (
            "fast",
            "standard",
            "deep",
        )
        [mcp] = rx.children(tool)
        assert mcp.name == "tools/call roll" and mcp.parent_id == tool.span_id
        assert {s.trace_id for s in rx.spans} == {call.trace_id}
        assert CANARY in out  # the caller's name and words were there to leak …
        assert not any(CANARY.encode() in b for b in rx.bodies)  # … and none reached the traces
    rc, out, err = await _ava_engine("--config", cfg, "export", call_id, "--format", "json", env={})
    assert rc == 0, err
    assert json.loads(out)["trace_id"] == call.trace_id


async def test_tracing_asked_for_without_the_sdk_names_the_otel_extra(tmp_path: Path) -> None:
    # an installation without the extra: opentelemetry.sdk cannot be imported (earlier on the path than the venv's)
    shadow = tmp_path / "shadow" / "opentelemetry" / "sdk"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text(
        "raise ModuleNotFoundError('No module named opentelemetry.sdk', name=__name__)\n"
    )
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "PYTHONPATH": f"{tmp_path / 'shadow'}:{ROOT}"}
    rc, _out, err = await _ava_engine(
        "--config", str(_config(tmp_path)), "call", "--context", "demo", "--say", "hi", env=env
    )
    assert rc == 2, err
    assert "pip install 'ava-console[otel]'" in err and "engine.telemetry" in err and "Traceback" not in err
