"""The secret canary: a secret in the keyring and one in an environment variable, both handed to an MCP server
that echoes its whole environment (message, data, JSON text, structured content, error text, stderr, a tool's
description), must not
come out of any output of the product: ``mcp call`` (text and ``--json``), a text call to an OpenAI-compatible
loopback fake (every request body it received), ``serve`` with ``/mcp/status``, ``/mcp/test`` and ``/metrics``
over HTTP and the tools called through the engine's own MCP endpoint, debug logs on stderr and in the
``engine.logging`` file, and the console's screens exported as SVG.

Each canary carries a random hex core that no escaping changes (JSON, ``\\u`` escapes, percent-encoding), so the
check is "the core occurs nowhere". The env canary holds ``"`` and ``\\`` (escaped in JSON), the keyring one a
non-ASCII letter (``\\u00e9`` in ASCII JSON). Every test also proves it could fail: the echo server's raw record
(written before anything reaches the engine) holds both cores, and the outputs hold the echoed keys.

The CLI runs as the installed ``ava-engine`` in a child process; its keyring is the file-backed test backend
(``tests/fixtures/file_keyring.py``) selected with PYTHON_KEYRING_BACKEND.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import keyring
import pytest

from tests.fixtures.memory_keyring import MemoryKeyring
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures"
ECHO = FIXTURES / "mcp_servers" / "env_echo.py"
AVA_ENGINE = Path(sys.executable).parent / "ava-engine"
FAKES = FIXTURES / "fake_providers"
if str(FAKES) not in sys.path:
    sys.path.insert(0, str(FAKES))

from fakebase import Reply  # noqa: E402
from openai_chat_fake import OpenAIChatFake  # noqa: E402

SERVICE = "ava-console"
ENDPOINT_TOKEN = "endpoint-token-not-the-canary"
TIMEOUT = 90


@dataclass
class Canary:
    dir: Path
    kr_core: str = field(default_factory=lambda: secrets.token_hex(12))
    env_core: str = field(default_factory=lambda: secrets.token_hex(12))

    @property
    def kr_value(self) -> str:
        return f"kr-canary-é-{self.kr_core}"

    @property
    def env_value(self) -> str:
        return f'env"canary\\{self.env_core}'

    @property
    def raw(self) -> Path:
        return self.dir / "echo-raw.txt"

    @property
    def log_file(self) -> Path:
        return self.dir / "logs" / "engine.log"

    @property
    def config(self) -> Path:
        return self.dir / "config.yaml"

    def write_config(self, provider_url: str = "http://127.0.0.1:9/v1", http: bool = False) -> Path:
        self.config.write_text(
            f"""engine:
  http: {{enabled: {str(http).lower()}, host: 127.0.0.1, port: 0}}
  logging: {{level: debug, file: logs/engine.log}}
  mcp_server:
    enabled: {str(http).lower()}
    expose: [mcp_echo_dump_env, mcp_echo_fail_env]
    auth_token: {ENDPOINT_TOKEN}
providers:
  fake:
    type: openai_chat
    model: test-model
    base_url: {provider_url}
    api_key: sk-test-not-the-canary
    options: {{retry_backoff_ms: 1}}
mcp:
  servers:
    echo:
      command: ["{{python}}", "{ECHO}"]
      connect_timeout_ms: 20000
      env:
        KR_CANARY: "${{keyring:CANARY}}"
        ENV_CANARY: "${{CANARY_ENV}}"
        ENV_ECHO_RAW: "{self.raw}"
contexts:
  canary:
    provider: fake
    prompt: "Test agent."
    tools: [mcp_echo_dump_env, mcp_echo_fail_env, mcp_echo_describe_env]
""",
            encoding="utf-8",
        )
        return self.config

    def child_env(self) -> dict[str, str]:
        """A child's environment: the file keyring holding the keyring canary, the env canary in CANARY_ENV."""
        ring = self.dir / "keyring.json"
        ring.write_text(json.dumps({f"{SERVICE}\x00CANARY": self.kr_value}), encoding="utf-8")
        return {
            **os.environ,
            "PYTHON_KEYRING_BACKEND": "file_keyring.FileKeyring",
            "PYTHONPATH": os.pathsep.join(filter(None, (str(FIXTURES), os.environ.get("PYTHONPATH")))),
            "AVA_TEST_KEYRING_FILE": str(ring),
            "CANARY_ENV": self.env_value,
        }

    def leaks(self, text: str | bytes) -> list[str]:
        blob = text.decode("utf-8", "replace") if isinstance(text, bytes) else text
        return [core for core in (self.kr_core, self.env_core) if core in blob]

    def assert_echoed(self) -> None:
        """The test could fail: the server really saw both canaries (its raw record, before any redaction)."""
        raw = self.raw.read_text(encoding="utf-8")
        assert self.kr_core in raw and self.env_core in raw, "the echo server never saw the canaries"


def read(path: str | Path) -> str:
    return Path(path).read_text(encoding="utf-8")


@pytest.fixture
def canary(tmp_path: Path) -> Canary:
    return Canary(tmp_path)


def run_cli(canary: Canary, *args: str) -> tuple[int, str, str]:
    import subprocess

    p = subprocess.run(
        [str(AVA_ENGINE), "--config", str(canary.config), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env=canary.child_env(),
        cwd=canary.dir,
    )
    return p.returncode, p.stdout, p.stderr


def test_mcp_call_text_json_and_debug_logs(canary: Canary) -> None:
    canary.write_config()
    outputs: dict[str, str] = {}
    for name, args in {
        "text": ("--log-level", "debug", "mcp", "call", "mcp_echo_dump_env", "--args", "{}"),
        "json": ("--json", "mcp", "call", "mcp_echo_dump_env", "--args", "{}"),
        "error": ("--json", "mcp", "call", "mcp_echo_fail_env", "--args", "{}"),
    }.items():
        code, out, err = run_cli(canary, *args)
        assert code == (1 if name == "error" else 0), (name, out, err)
        outputs[f"{name} stdout"], outputs[f"{name} stderr"] = out, err
    canary.assert_echoed()
    outputs["log file"] = canary.log_file.read_text(encoding="utf-8")
    # What was echoed did come out, masked: the message, the data, the JSON text and the error text.
    assert "KR_CANARY=" in outputs["text stdout"] and "DEBUG" in outputs["text stderr"]
    result = json.loads(outputs["json stdout"])
    assert result["status"] == "success" and "KR_CANARY=" in result["message"]
    assert set(result["data"]["environment"]) >= {"KR_CANARY", "ENV_CANARY"}
    assert "ENV_CANARY" in result["data"]["json_text"]
    error = json.loads(outputs["error stdout"])
    assert error["status"] == "error" and "ENV_CANARY=" in error["message"]
    assert "dump_env" in outputs["log file"]  # the debug log file was written (engine.logging.file)
    leaks = {name: canary.leaks(text) for name, text in outputs.items() if canary.leaks(text)}
    assert not leaks, f"the canary leaked into {sorted(leaks)}"


async def test_text_call_to_openai_fake(canary: Canary) -> None:
    fake = OpenAIChatFake(
        [
            Reply(calls=[("mcp_echo_dump_env", {})]),
            Reply(calls=[("mcp_echo_fail_env", {})]),
            Reply(text="All done."),
        ]
    )
    await fake.start()
    try:
        canary.write_config(fake.base_url)
        proc = await asyncio.create_subprocess_exec(
            str(AVA_ENGINE),
            "--config",
            str(canary.config),
            "--log-level",
            "debug",
            "call",
            "--context",
            "canary",
            "--say",
            "show me your environment",
            "--json",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=canary.child_env(),
            cwd=canary.dir,
        )
        out, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    finally:
        await fake.stop()
    assert proc.returncode == 0, err.decode()
    assert not fake.errors, fake.errors
    canary.assert_echoed()
    assert len(fake.requests) == 3
    described = [t["function"]["description"] for t in fake.requests[0]["tools"]]
    assert any("KR_CANARY=" in d for d in described)  # the description reached the provider, masked
    tool_messages = [m for m in fake.requests[2]["messages"] if m["role"] == "tool"]
    assert len(tool_messages) == 2 and all("KR_CANARY" in m["content"] for m in tool_messages)
    events = [json.loads(line) for line in out.decode().splitlines()]
    assert {"tool.completed", "transcript.added"} <= {e["type"] for e in events}
    bodies = {
        "request bodies (utf-8)": json.dumps(fake.requests, ensure_ascii=False),
        "request bodies (ascii)": json.dumps(fake.requests),
        "stdout": out.decode(),
        "stderr": err.decode(),
        "log file": canary.log_file.read_text(encoding="utf-8"),
    }
    leaks = {name: canary.leaks(text) for name, text in bodies.items() if canary.leaks(text)}
    assert not leaks, f"the canary leaked into {sorted(leaks)}"


async def call_engine_endpoint(url: str) -> str:
    """Both echo tools called through the engine's own MCP endpoint, as another agent would; the raw results."""
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    out: list[str] = []
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {ENDPOINT_TOKEN}"}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            for name in ("mcp_echo_dump_env", "mcp_echo_fail_env"):
                result = await client.call_tool(name, {})
                out.append(result.model_dump_json())
    return "\n".join(out)


async def test_serve_status_test_and_metrics_over_http(canary: Canary) -> None:
    canary.write_config(http=True)
    proc = await asyncio.create_subprocess_exec(
        str(AVA_ENGINE),
        "--config",
        str(canary.config),
        "--log-level",
        "debug",
        "--json",
        "serve",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=canary.child_env(),
        cwd=canary.dir,
    )
    responses: dict[str, str] = {}
    try:
        assert proc.stdout is not None
        first = await asyncio.wait_for(proc.stdout.readline(), TIMEOUT)
        url = json.loads(first)["http"]
        async with aiohttp.ClientSession() as http:

            async def echo_up_with_its_stderr() -> bool:
                async with http.get(f"{url}/mcp/status") as r:
                    assert r.status == 200
                    responses["/mcp/status"] = await r.text()
                status = next(s for s in json.loads(responses["/mcp/status"])["servers"] if s["id"] == "echo")
                return status["state"] == "up" and any("KR_CANARY" in line for line in status["stderr_tail"])

            await wait_until(echo_up_with_its_stderr, within=20, what="echo up, its stderr tail with the canary line")
            async with http.post(f"{url}/mcp/test/echo", json={}) as r:
                responses["/mcp/test/echo"] = await r.text()
                assert r.status == 200, responses["/mcp/test/echo"]
            assert "KR_CANARY" in responses["/mcp/test/echo"]  # a fresh probe's stderr, masked
            async with http.get(f"{url}/metrics") as r:
                assert r.status == 200
                responses["/metrics"] = await r.text()
        responses["/mcp tools/call"] = await call_engine_endpoint(f"{url}/mcp")
        assert "KR_CANARY" in responses["/mcp tools/call"]  # the echo reached the other agent, masked
    finally:
        proc.send_signal(signal.SIGTERM)
        rest, err = await asyncio.wait_for(proc.communicate(), TIMEOUT)
    canary.assert_echoed()
    outputs = {
        **responses,
        "stdout": first.decode() + rest.decode(),
        "stderr": err.decode(),
        "log file": canary.log_file.read_text(encoding="utf-8"),
    }
    leaks = {name: canary.leaks(text) for name, text in outputs.items() if canary.leaks(text)}
    assert not leaks, f"the canary leaked into {sorted(leaks)}"


async def wait(pilot: Any, predicate: Callable[[], bool], within: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while not predicate():
        assert loop.time() < end, f"condition not met within {within}s"
        await pilot.pause(0.05)


async def test_console_screens_exported_as_svg(canary: Canary, monkeypatch: pytest.MonkeyPatch) -> None:
    from console.app import AvaConsole
    from engine.sessions.session import CallSession

    previous = keyring.get_keyring()
    ring = MemoryKeyring()
    ring.set_password(SERVICE, "CANARY", canary.kr_value)
    keyring.set_keyring(ring)
    monkeypatch.setenv("CANARY_ENV", canary.env_value)
    canary.write_config()
    shots: dict[str, str] = {}
    try:
        app = AvaConsole(canary.config)
        async with app.run_test(size=(160, 50)) as pilot:
            await wait(pilot, lambda: app.engine_running, within=30)
            assert app.engine is not None
            engine = app.engine

            def up() -> bool:
                return any(s["state"] == "up" for s in engine.server_status()["servers"])

            await wait(pilot, up, within=30)
            session = CallSession(call_id="canary-call", context="canary", provider="fake")
            session.shown_tools = frozenset({"mcp_echo_dump_env", "mcp_echo_fail_env"})
            for name in ("mcp_echo_dump_env", "mcp_echo_fail_env"):
                result = await engine.execute_tool(session, name, {}, tool_call_id=name)
                assert "KR_CANARY" in result.message
            for key, screen in (("f3", "ServersScreen"), ("f2", "ToolLogScreen")):
                await pilot.press(key)
                await wait(pilot, lambda s=screen: type(app.screen).__name__ == s)  # type: ignore[misc]
                await pilot.pause(0.3)
                if screen == "ToolLogScreen":
                    await pilot.press("enter")
                    await pilot.pause(0.3)
                shots[screen] = app.save_screenshot(filename=f"{screen}.svg", path=str(canary.dir))
    finally:
        keyring.set_keyring(previous)
    canary.assert_echoed()
    exports = {screen: read(path) for screen, path in shots.items()}
    assert "KR_CANARY" in exports["ServersScreen"]  # the stderr tail is on screen, masked
    assert "ENV_CANARY" in exports["ToolLogScreen"]  # the result detail is on screen, masked
    exports["log file"] = read(canary.log_file)  # the console applies engine.logging
    leaks = {name: canary.leaks(text) for name, text in exports.items() if canary.leaks(text)}
    assert not leaks, f"the canary leaked into {sorted(leaks)}"
