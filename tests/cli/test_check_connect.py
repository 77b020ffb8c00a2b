"""``ava-engine check --connect`` (the installed entry point, a child process) against the loopback fakes of the
four realtime providers and the ARI emulator, all running in this test's event loop on 127.0.0.1.

Why: issues 14 and 15 ask that an auth failure, a wrong model or unreachable / refusing Asterisk surface as one clear
message in ``check --connect``, naming the provider (or ARI) and what failed, never the key.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
for _dir in (ROOT / "tests" / "fixtures" / "fake_providers", ROOT / "tests" / "fixtures" / "ari"):
    if str(_dir) not in sys.path:
        sys.path.insert(0, str(_dir))

from emulator import AriEmulator  # noqa: E402
from realtime_deepgram_fake import DeepgramFake  # noqa: E402
from realtime_elevenlabs_fake import AGENT_ID, ElevenLabsFake, ElevenLabsRestFake  # noqa: E402
from realtime_elevenlabs_fake import API_KEY as EL_KEY  # noqa: E402
from realtime_gemini_fake import GeminiLiveFake  # noqa: E402
from realtime_openai_fake import OpenAIRealtimeFake  # noqa: E402

ENTRY = Path(sys.executable).parent / "ava-engine"
#: The key every provider in these configs carries (the ElevenLabs REST fake insists on its own).
KEY = "sk-connect-check-SECRET-4242"
ARI_PASSWORD = "ari-secret"


def provider_yaml(kind: str, url: str) -> str:
    """``providers.<kind>`` as a user writes it (keys from the environment, as ``${keyring:…}`` would be)."""
    common = f"    base_url: {url}\n    timeout_ms: 5000\n"
    if kind == "openai_realtime":
        return f"  rt:\n    type: openai_realtime\n    model: gpt-realtime\n    api_key: ${{CC_KEY}}\n{common}"
    if kind == "gemini_live":
        return f"  rt:\n    type: gemini_live\n    model: gemini-live-test\n    api_key: ${{CC_KEY}}\n{common}"
    if kind == "deepgram_agent":
        return f"  rt:\n    type: deepgram_agent\n    model: gpt-4o-mini\n    api_key: ${{CC_KEY}}\n{common}"
    return (
        f"  rt:\n    type: elevenlabs_agent\n    agent_id: {AGENT_ID}\n    api_key: ${{CC_EL_KEY}}\n"
        f"    max_retries: 0\n{common}"
    )


def write_config(tmp_path: Path, providers: str, asterisk: str = "") -> Path:
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text(
        "engine:\n  http: {enabled: false}\n"
        f"providers:\n{providers}"
        "contexts:\n  desk: {provider: rt, greeting: Hello.}\n" + asterisk,
        encoding="utf-8",
    )
    return cfg


def asterisk_yaml(url: str, password: str) -> str:
    return f"asterisk:\n  enabled: true\n  ari_url: {url}\n  username: ava\n  password: ${{CC_ARI}}\n" + (
        "  request_timeout_s: 3\n"
    )


async def check(cfg: Path, *extra: str, ari_password: str = ARI_PASSWORD) -> tuple[int, str, str]:
    """Run the installed ``ava-engine check --connect`` without blocking the loop the fakes answer on."""
    env = {**os.environ, "CC_KEY": KEY, "CC_EL_KEY": EL_KEY, "CC_ARI": ari_password}
    proc = await asyncio.create_subprocess_exec(
        str(ENTRY),
        "check",
        "--connect",
        "--config",
        str(cfg),
        *extra,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        cwd=ROOT,
        env=env,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 90)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@asynccontextmanager
async def fake_for(kind: str) -> AsyncIterator[tuple[Any, str]]:
    """The running fake that refuses handshakes through ``refuse_status``, and the base_url pointing at it."""
    if kind == "elevenlabs_agent":
        async with ElevenLabsFake() as ws, ElevenLabsRestFake(ws) as rest:
            yield rest, rest.url
        return
    fakes = {"openai_realtime": OpenAIRealtimeFake, "gemini_live": GeminiLiveFake, "deepgram_agent": DeepgramFake}
    async with fakes[kind]() as fake:
        yield fake, fake.url


KINDS = ["openai_realtime", "gemini_live", "deepgram_agent", "elevenlabs_agent"]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_reachable_provider_is_ok_in_text_and_json(tmp_path: Path, kind: str) -> None:
    async with fake_for(kind) as (fake, url):
        cfg = write_config(tmp_path, provider_yaml(kind, url))
        code, out, err = await check(cfg)
        jcode, jout, jerr = await check(cfg, "--json")
    assert code == 0, out + err
    assert f"ok      providers.rt ({kind})" in out
    assert "1 ok, 0 failed, 0 not checked" in out
    assert jcode == 0, jout + jerr
    report = json.loads(jout)
    assert report["ok"] is True and report["providers"] == ["rt"]
    [row] = report["connections"]
    assert row["target"] == "providers.rt" and row["kind"] == kind and row["status"] == "ok"
    assert row["detail"]["provider"] == "rt" and row["detail"]["type"] == kind
    assert KEY not in out + err + jout + jerr and EL_KEY not in out + err + jout + jerr
    assert getattr(fake, "errors", []) == []


@pytest.mark.parametrize("kind", KINDS)
async def test_a_refused_key_names_the_provider_and_the_status_without_the_key(tmp_path: Path, kind: str) -> None:
    async with fake_for(kind) as (fake, url):
        fake.refuse_status = 401
        cfg = write_config(tmp_path, provider_yaml(kind, url))
        code, out, err = await check(cfg)
        jcode, jout, jerr = await check(cfg, "--json")
    assert code == 1 and jcode == 1
    line = next(ln for ln in out.splitlines() if "providers.rt" in ln)
    assert line.lstrip().startswith("FAILED") and "rt: authentication failed" in line and "401" in line, line
    [row] = json.loads(jout)["connections"]
    assert row["status"] == "failed" and "rt: authentication failed" in row["message"] and "401" in row["message"]
    assert json.loads(jout)["ok"] is False
    assert KEY not in out + err + jout + jerr and EL_KEY not in out + err + jout + jerr


async def test_all_four_at_once_one_failing_does_not_hide_the_others(tmp_path: Path) -> None:
    async with fake_for("openai_realtime") as (_oai, oai_url), fake_for("deepgram_agent") as (dg, dg_url):
        dg.refuse_status = 403
        providers = provider_yaml("openai_realtime", oai_url) + provider_yaml("deepgram_agent", dg_url).replace(
            "  rt:", "  dg:"
        )
        cfg = write_config(tmp_path, providers)
        code, out, err = await check(cfg, "--json")
    assert code == 1, out + err
    rows = {r["target"]: r for r in json.loads(out)["connections"]}
    assert rows["providers.rt"]["status"] == "ok"
    assert rows["providers.dg"]["status"] == "failed" and "403" in rows["providers.dg"]["message"]


async def test_a_text_provider_is_listed_as_not_checked(tmp_path: Path) -> None:
    providers = "  rt:\n    type: openai_chat\n    model: gpt-4o-mini\n    api_key: ${CC_KEY}\n    base_url: http://127.0.0.1:9/v1\n"
    code, out, err = await check(write_config(tmp_path, providers))
    assert code == 0, out + err
    assert "providers.rt (openai_chat)" in out and "not checked" in out and KEY not in out + err


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_asterisk_ok_wrong_password_and_unreachable(tmp_path: Path) -> None:
    async with fake_for("openai_realtime") as (_, url), AriEmulator(password=ARI_PASSWORD) as emu:
        cfg = write_config(tmp_path, provider_yaml("openai_realtime", url), asterisk_yaml(emu.url, ARI_PASSWORD))
        ok_code, ok_out, ok_err = await check(cfg, "--json")
        bad_code, bad_out, bad_err = await check(cfg, ari_password="not-the-password")
        dead = write_config(
            tmp_path, provider_yaml("openai_realtime", url), asterisk_yaml(f"http://127.0.0.1:{free_port()}/ari", "x")
        )
        dead_code, dead_out, _dead_err = await check(dead)
    assert emu.violations == []
    assert ok_code == 0, ok_out + ok_err
    rows = {r["target"]: r for r in json.loads(ok_out)["connections"]}
    assert rows["asterisk"]["status"] == "ok" and rows["asterisk"]["detail"]["url"] == emu.url
    assert rows["providers.rt"]["status"] == "ok"

    assert bad_code == 1
    line = next(ln for ln in bad_out.splitlines() if "asterisk (ari)" in ln)
    assert "FAILED" in line and "401" in line and "wrong ARI username or password" in line, line
    assert "not-the-password" not in bad_out + bad_err

    assert dead_code == 1
    line = next(ln for ln in dead_out.splitlines() if "asterisk (ari)" in ln)
    assert "FAILED" in line and "cannot reach Asterisk at http://127.0.0.1:" in line, line
    assert "ok      providers.rt" in dead_out  # the provider's own line is still there
