"""engine/_compat: every private name the engine relies on is there, takes what it is given, and does what it is used
for. A dependency that changes one fails here, naming it, before anything deeper breaks."""

from __future__ import annotations

import argparse
import asyncio
import sys
import types
from typing import Any

import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.client.stdio import stdio_client
from prometheus_client import CollectorRegistry, Histogram

from engine._compat import mcp_sdk, portaudio, prometheus, stdlib
from engine._compat._check import CompatError, private
from engine._compat.anyio_streams import asyncio_writer
from engine.mcp import transports


def test_a_missing_private_name_fails_naming_the_dependency_and_its_version() -> None:
    with pytest.raises(CompatError, match=r"^mcp \d+\.\d+\.\d+ has no gone\._spawn: the project relies on it"):
        private(types.ModuleType("gone"), "_spawn", "mcp")


def test_changed_parameters_fail_naming_both() -> None:
    owner = types.SimpleNamespace(_spawn=lambda cmd, argv: None)
    with pytest.raises(CompatError, match=r"now takes \('cmd', 'argv'\), the project relies on \('command', 'args'\)"):
        private(owner, "_spawn", "mcp", ("command", "args"))


def test_the_sdk_stdio_client_spawns_through_the_wrapped_spawner() -> None:
    """The SDK's own stdio_client looks its spawner up at each call, so the engine's wrapper sees its children."""
    assert sys.modules["mcp.client.stdio"]._create_platform_compatible_process._ava_hook
    assert "_create_platform_compatible_process" in stdio_client.__wrapped__.__code__.co_names  # type: ignore[attr-defined]


async def test_a_stdio_child_is_spawned_reported_and_stopped_as_the_sdk_does() -> None:
    seen: list[int] = []
    transports.spawn_listeners.append(seen.append)
    try:
        command = await mcp_sdk.executable_command(sys.executable)
        process = await mcp_sdk.spawn_stdio_process(
            command, ["-c", "import sys; sys.stdin.read()"], {}, sys.stderr, None
        )
    finally:
        transports.spawn_listeners.remove(seen.append)
    assert seen == [process.pid]
    writer = asyncio_writer(process.stdin)  # anyio's asyncio backend: the StreamWriter under the wrapper
    assert isinstance(writer, asyncio.StreamWriter)
    await mcp_sdk.stop_stdio_process(process)
    assert process.returncode is not None


def test_asyncio_writer_of_any_other_stream_is_none() -> None:
    assert asyncio_writer(object()) is None


def test_the_oauth_steps_the_engine_overrides_are_the_providers() -> None:
    for name, params in mcp_sdk.OAUTH_OVERRIDES.items():
        private(OAuthClientProvider, name, "mcp", params)
    from engine.mcp.oauth import EngineOAuth

    overridden = {n for n in vars(EngineOAuth) if n.startswith("_") and not n.startswith("__") and n != "_abc_impl"}
    relied_on = overridden & {n for n in vars(OAuthClientProvider) if n.startswith("_")}
    assert relied_on <= set(mcp_sdk.OAUTH_OVERRIDES), relied_on - set(mcp_sdk.OAUTH_OVERRIDES)


def test_create_mcp_http_client_gives_an_httpx2_client() -> None:
    import httpx2

    client = mcp_sdk.create_mcp_http_client()
    assert isinstance(client, httpx2.AsyncClient)


@pytest.mark.skipif(sys.version_info[:2] != (3, 11), reason="asyncio's _current_tasks is read on 3.11 only")
async def test_stepping_tasks_maps_the_running_loop_to_this_task() -> None:
    stepping = stdlib.stepping_tasks()
    assert stepping is not None
    assert stepping[asyncio.get_running_loop()] is asyncio.current_task()


def test_re_parse_gives_opcodes_and_raises_re_error() -> None:
    import re

    assert [str(op) for op, _arg in stdlib.re_parse("a{2}")] == ["MAX_REPEAT"]
    with pytest.raises(re.error):
        stdlib.re_parse("(")


def test_subparser_actions_finds_add_subparsers() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    assert list(stdlib.subparser_actions(parser)) == [sub]


def test_portaudio_reinitialize_terminates_then_initialises() -> None:
    import sounddevice

    private(sounddevice, "_terminate", "sounddevice", ())
    private(sounddevice, "_initialize", "sounddevice", ())
    calls: list[str] = []
    fake = types.ModuleType("sounddevice")
    fake._terminate = lambda: calls.append("terminate")  # type: ignore[attr-defined]
    fake._initialize = lambda: calls.append("initialize")  # type: ignore[attr-defined]
    portaudio.reinitialize(fake)
    assert calls == ["terminate", "initialize"]


def test_add_to_histogram_gives_what_observe_gives() -> None:
    bounds = (0.1, 1.0, 10.0)
    made: list[Any] = []
    for _ in range(2):
        registry = CollectorRegistry()
        made.append((registry, Histogram("h", "h", ["t"], buckets=bounds, registry=registry)))
    (observed_reg, observed), (added_reg, added) = made
    for v in (0.05, 0.5, 0.5, 20.0):
        observed.labels("x").observe(v)
    prometheus.add_to_histogram(added.labels("x"), 21.05, [1, 2, 0, 1])
    samples = [
        [(s.name, s.labels, s.value) for m in reg.collect() for s in m.samples if not s.name.endswith("_created")]
        for reg in (observed_reg, added_reg)
    ]
    assert samples[0] == samples[1]
    assert ("h_count", {"t": "x"}, 4.0) in samples[1]
