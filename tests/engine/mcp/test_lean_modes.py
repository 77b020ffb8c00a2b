"""Built-in servers in-process and bundled: a tool that crashes or hangs never takes the engine down.

In-process, ``sys.exit()`` or ``KeyboardInterrupt`` in a tool fails that call (the engine's process goes on); a
hung tool times out like any other. Bundled, a tool that ends the shared child (``os._exit``, as a segfault
would) is reported and every bundled server is restarted on a new child; one server's restart leaves the others
and the child alone; the child goes with the last connection (the autouse no-orphan check).
"""

from __future__ import annotations

import os
import signal
from typing import Any

import pydantic
import pytest

from engine.config.models import McpServerConfig
from engine.events import ServerStateChanged
from engine.mcp.bundle import endpoint_key, shared_child
from tests.engine.mcp.helpers import settings, wait_for

CRASHY = "tests.fixtures.mcp_servers.crashy:make"
RESTART = {"backoff_ms": 20, "backoff_max_ms": 100, "max_restarts": 3}


def server(transport: str, target: str = CRASHY, **extra: Any) -> dict[str, Any]:
    return {"transport": transport, "target": target, "connect_timeout_ms": 30_000, "restart": RESTART, **extra}


async def call(engine: Any, name: str, args: dict[str, Any] | None = None) -> Any:
    return await engine.executor.execute(None, name, args or {}, allowed=frozenset({name}))


def states(engine: Any) -> dict[str, str]:
    return {s["id"]: s["state"] for s in engine.server_status()["servers"]}


@pytest.mark.parametrize("transport", ["inprocess", "bundled"])
@pytest.mark.parametrize("tool", ["sys_exit", "sys_exit_async", "interrupt"])
async def test_a_tool_that_exits_fails_only_its_call(make_engine: Any, transport: str, tool: str) -> None:
    engine = await make_engine(settings({"c": server(transport)}))
    before = (await call(engine, "mcp_c_pid")).message
    r = await call(engine, f"mcp_c_{tool}")
    assert r.status == "error" and "tried to end the process" in r.message
    assert (await call(engine, "mcp_c_ok")).message == "fine"
    assert (await call(engine, "mcp_c_pid")).message == before  # the same process: nothing restarted
    assert states(engine) == {"c": "up"} and engine.mcp.supervisors["c"].restarts == 0


@pytest.mark.parametrize("transport", ["inprocess", "bundled"])
async def test_a_hung_tool_times_out_and_the_rest_keeps_answering(make_engine: Any, transport: str) -> None:
    slow: dict[str, Any] = {"tools": [{"name": "hang", "timeout_ms": 300}]}
    engine = await make_engine(settings({"c": server(transport, **slow), "d": server(transport)}))
    r = await call(engine, "mcp_c_hang", {"seconds": 2.0})
    assert r.status == "timeout"
    assert (await call(engine, "mcp_d_ok")).message == "fine"
    assert (await call(engine, "mcp_c_ok")).message == "fine"
    assert states(engine) == {"c": "up", "d": "up"}


async def test_a_tool_that_kills_the_bundle_restarts_every_bundled_server(make_engine: Any) -> None:
    engine = await make_engine(settings({"c": server("bundled"), "d": server("bundled")}))
    first = int((await call(engine, "mcp_c_pid")).message)
    assert first == shared_child().process.pid  # type: ignore[union-attr]
    r = await call(engine, "mcp_c_hard_exit")
    # "… (connection closed: the bundle process exited …)" or, when the broken socket is seen first, "… (connection
    # closed)": the call fails at once either way (the idle case below checks the reason).
    assert r.status == "error" and r.message.startswith("server c stopped (connection closed")
    await wait_for(lambda: engine.mcp.supervisors["d"].restarts == 1, limit_s=30)
    await wait_for(lambda: states(engine) == {"c": "up", "d": "up"}, limit_s=30)
    second = int((await call(engine, "mcp_d_pid")).message)
    assert second != first and int((await call(engine, "mcp_c_pid")).message) == second
    # Each restarted (a reconnect that raced the death, on a loaded machine, may have counted one more).
    assert all(s["restarts_total"] >= 1 for s in engine.server_status()["servers"])


async def test_the_bundle_killed_from_outside_is_noticed_at_once(make_engine: Any) -> None:
    engine = await make_engine(settings({"c": server("bundled")}))
    pid = shared_child().process.pid  # type: ignore[union-attr]
    sub = engine.bus.subscribe()
    os.kill(pid, signal.SIGKILL)
    seen: list[str] = []

    def reported() -> bool:
        seen.extend(str(getattr(ev, "last_error", "")) for ev in sub.drain() if isinstance(ev, ServerStateChanged))
        return any("bundle process exited" in s for s in seen)

    await wait_for(reported, limit_s=5)
    await wait_for(lambda: states(engine) == {"c": "up"}, limit_s=30)
    assert int((await call(engine, "mcp_c_pid")).message) != pid


async def test_one_bundled_server_restarts_alone(make_engine: Any) -> None:
    engine = await make_engine(settings({"c": server("bundled"), "d": server("bundled")}))
    pid = (await call(engine, "mcp_d_pid")).message
    await engine.mcp.supervisors["c"].restart()
    await wait_for(lambda: states(engine)["c"] == "up", limit_s=30)
    assert (await call(engine, "mcp_c_pid")).message == pid == (await call(engine, "mcp_d_pid")).message
    assert engine.mcp.supervisors["d"].restarts_total == 0


@pytest.mark.parametrize("transport", ["inprocess", "bundled"])
async def test_a_bad_command_line_fails_with_the_servers_own_reason(make_engine: Any, transport: str) -> None:
    bad = server(transport, "engine.servers.dice.server:create", args=["--seed", "x"], restart={"enabled": False})
    engine = await make_engine(settings({"dice": bad}))
    st = engine.server_status()["servers"][0]
    assert st["state"] == "failed"
    assert "--seed / AVA_DICE_SEED must be a whole number, got 'x'" in st["last_error"]


def test_args_belong_to_inprocess_and_bundled_servers_only() -> None:
    cfg = McpServerConfig.model_validate({"transport": "bundled", "target": "m:x", "args": ["--a"]})
    assert cfg.args == ["--a"]
    with pytest.raises(pydantic.ValidationError, match="only inprocess and bundled"):
        McpServerConfig.model_validate({"command": ["x"], "args": ["--a"]})
    with pytest.raises(pydantic.ValidationError, match="a bundled server needs 'target'"):
        McpServerConfig.model_validate({"transport": "bundled"})


def test_endpoint_keys_are_stable_and_tell_apart_command_lines() -> None:
    a = endpoint_key("engine.servers.dice.server:create", None)
    assert a == endpoint_key("engine.servers.dice.server:create", None) and a.startswith("dice-")
    assert a != endpoint_key("engine.servers.dice.server:create", ["--seed", "1"])


async def test_a_bundle_cut_short_while_starting_leaves_no_child(make_engine: Any) -> None:
    # The child needs well over 50 ms to import the SDK: the connect timeout cancels its start (no-orphan check).
    quick = server("bundled", connect_timeout_ms=50, restart={"enabled": False})
    engine = await make_engine(settings({"c": quick}))
    st = engine.server_status()["servers"][0]
    assert st["state"] == "failed" and "connect_timeout_ms" in st["last_error"]
    assert shared_child().process is None
