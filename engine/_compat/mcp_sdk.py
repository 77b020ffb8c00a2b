"""The mcp SDK's private API the engine relies on (pinned by ``mcp>=2.3,<2.4`` in pyproject.toml).

- ``mcp.client.stdio._create_platform_compatible_process(command, args, env, errlog, cwd)``: the SDK's one stdio
  spawner. ``stdio_client`` looks it up as a module global on every spawn, so ``wrap_stdio_spawn`` replaces it
  there once: every stdio child (the engine's direct transport and the SDK's own ``stdio_client``) gets the
  engine's environment and is reported (process groups to kill, the tests' no-orphan check, the benches' pids).
- ``mcp.client.stdio._get_executable_command(command)`` and ``_stop_server_process(process)``: the direct transport
  (engine/mcp/stdio_direct.py) spawns and stops a child exactly as ``stdio_client`` does.
- ``mcp.shared._httpx_utils.create_mcp_http_client``: the HTTP client the SDK's own transports use (its defaults).
- ``OAuthClientProvider._get_token_endpoint()``: the token endpoint the SDK discovered (the registration check).
- ``OAUTH_OVERRIDES``: the provider's private steps engine/mcp/oauth.py overrides and calls through ``super()``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

import mcp.client.stdio as sdk_stdio
import mcp.shared._httpx_utils as sdk_httpx
from mcp.client.auth import OAuthClientProvider

from engine._compat._check import private

__all__ = [
    "OAUTH_OVERRIDES",
    "SpawnFn",
    "create_mcp_http_client",
    "executable_command",
    "spawn_stdio_process",
    "stop_stdio_process",
    "token_endpoint",
    "wrap_stdio_spawn",
]

SpawnFn = Callable[..., Awaitable[Any]]
_SPAWN = "_create_platform_compatible_process"
_SPAWN_PARAMS = ("command", "args", "env", "errlog", "cwd")

private(sdk_stdio, _SPAWN, "mcp", _SPAWN_PARAMS)
_get_executable_command: Callable[[str], Awaitable[str]] = private(
    sdk_stdio, "_get_executable_command", "mcp", ("command",)
)
_stop_server_process: Callable[[Any], Awaitable[None]] = private(sdk_stdio, "_stop_server_process", "mcp", ("process",))
create_mcp_http_client: Callable[..., Any] = private(
    sdk_httpx, "create_mcp_http_client", "mcp", ("headers", "timeout", "auth")
)

#: OAuthClientProvider's private steps that engine/mcp/oauth.py overrides (name → its parameters after ``self``).
OAUTH_OVERRIDES: dict[str, tuple[str, ...]] = {
    "_handle_token_response": ("self", "response"),
    "_handle_refresh_response": ("self", "response"),
    "_perform_authorization": ("self",),
    "_auth_flow": ("self", "request"),
    "_get_token_endpoint": ("self",),
    "_initialize": ("self",),  # replaced whole: the SDK calls it before the first request of a flow
}
for _name, _params in OAUTH_OVERRIDES.items():
    private(OAuthClientProvider, _name, "mcp", _params)


def wrap_stdio_spawn(wrap: Callable[[SpawnFn], SpawnFn]) -> None:
    """Replace the SDK's stdio spawner with ``wrap(spawner)``, once per process (a second call does nothing)."""
    original: SpawnFn = getattr(sdk_stdio, _SPAWN)
    if getattr(original, "_ava_hook", False):
        return
    wrapped = wrap(original)
    wrapped._ava_hook = True  # type: ignore[attr-defined]
    setattr(sdk_stdio, _SPAWN, wrapped)


async def spawn_stdio_process(
    command: str, args: list[str], env: dict[str, str], errlog: TextIO, cwd: Path | str | None
) -> Any:
    """Spawn a stdio child as ``stdio_client`` does (through the wrapped spawner, so it is reported)."""
    spawn: SpawnFn = getattr(sdk_stdio, _SPAWN)
    return await spawn(command=command, args=args, env=env, errlog=errlog, cwd=cwd)


async def executable_command(command: str) -> str:
    """The command as the SDK would run it (on Windows it resolves shims)."""
    return await _get_executable_command(command)


async def stop_stdio_process(process: Any) -> None:
    """Stop a stdio child as ``stdio_client`` does (stdin closed, then terminate, then kill; each wait bounded)."""
    await _stop_server_process(process)


def token_endpoint(provider: OAuthClientProvider) -> str:
    """The token endpoint the provider discovered (or its default under the server's URL)."""
    endpoint: str = provider._get_token_endpoint()
    return endpoint
