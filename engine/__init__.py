"""ava-console's engine: brings tools (built-in and MCP) into LLM and voice providers. Never imports textual.

The public API — what the console (and any other UI or embedding program) may use — is this package's names
plus ``engine.events`` (events out) and ``engine.config`` (settings, loading, saving, secrets). Everything else is
the engine's internals and may change.

``Engine(settings, config_path=…, serve_http=…)`` — commands in (methods, each with a docstring):
  lifecycle   ``start()``, ``stop()``, ``reload(settings)`` (publishes ``config.reloaded``),
              ``configure_logging(stream)`` (the config's ``engine.logging``, secrets masked)
  calls       ``start_call(context, …)``, ``user_said(call_id, text)``, ``end_call(call_id, reason)``,
              ``set_provider(call_id, provider)``
  operator    ``set_tier(call_id | None, tier)``, ``set_tool_enabled(call_id, name, enabled, apply)``
  MCP         ``restart_server(id)``, ``test_server(id | config)``, ``set_server_enabled(id, on)``,
              ``calibrate(id)``, ``sign_in_server(id, show_url)`` / ``sign_out_server(id)`` (OAuth for a remote
              server; ``SignInError`` when sign-in did not complete; ``open_in_browser(url)`` for the URL);
              no engine needed: ``oauth_sign_in_stored(id)`` / ``forget_oauth_sign_in(id)`` (whether the keyring
              holds a server id's tokens and client registration, whatever URL; delete them: a removed server's)
  phone       ``monitor_call(channel_id, mode, devices=…)``: the operator on a live phone call (listen,
              whisper_agent, whisper_caller, takeover, off); ``transfer_call(call_id, destination, mode)``
              (blind or warm, to a ``tools.extensions`` destination, as the transfer tools do it)
  steering    ``say_now(call_id, text)`` (the agent says a line next), ``whisper(call_id, text)`` (a hidden
              instruction for its next turn); ``steer_max_chars``; publishes ``steering.injected``
  approvals   ``approve_tool(approval_id)``, ``deny_tool(approval_id, reason)``, ``pending_approvals()`` →
              ``[PendingApproval]``, ``attach_approver(name)`` → detach (none attached: approvals are denied)
  e-mail      ``outbox_messages(status=None)`` → ``[OutboxMessage]``, ``retry_email(id)``, ``drop_email(id)``
  softphone   ``softphone(backend_factory=None)`` → ``Softphone`` with ``start(context, input, output)``,
              ``end()``, ``mute(on)``, ``press()``, ``release()`` (and read-only ``active``, ``call_id``,
              ``muted``, ``push_to_talk``, ``state``)
Queries (plain data or frozen snapshots, taken when called):
  ``calls_info()`` / ``call_info(id)`` → ``CallInfo``; ``tool_states(call_id)`` → ``[ToolState]``;
  ``server_status()``; ``leaderboard()``; ``tools_report(context, tier, provider)``; ``context_view(context)``;
  ``known_secrets()``; attributes ``settings``, ``default_tier``, ``started``, ``base_dir``, ``config_path``.
Helpers: ``percentile(sorted_values, q)`` (the one definition every screen uses), ``configure_logging``,
``browser_refusal(hosts, origins, bind_host, allowed_hosts, allowed_origins)`` (the Host/Origin rule of every
server a web page can reach: the engine's HTTP API and the browser console), ``Redactor(secrets)`` and
``RedactingFilter(redactor)`` (the engine's masking of secret values, for a UI's own output and logs).
Tools: ``tool_catalog(engine, server=None)`` → each tool's schema and MCP annotations; ``call_tool(engine,
exposed_name, args, context=None)`` → ``ToolResult`` through the full execution path as the operator
(``UnknownTool`` for a name no server has): the tool inspector and ``ava-engine mcp call``.
Events out: ``engine.bus.subscribe(maxsize=…, types=…)`` → a ``Subscription`` of the dataclasses in
``engine.events`` (``call.*``, ``transcript.added``, ``tool.*``, ``tier.changed``, ``tools.changed``,
``server.state``, ``announcement.*``, ``turn.over_budget``, ``config.reloaded``, ``engine.error``,
``steering.injected``,
``softphone.state``, ``softphone.level``). Slow subscribers lose their oldest events, counted in ``dropped``.
Audio devices: ``list_audio_devices(rescan)`` → ``[DeviceInfo]``; ``AudioUnavailable`` says what is missing.
Recordings (the flight recorder, no engine needed): ``read_recording(path)`` → ``Recording`` (``events()``: the
recorded events as ``engine.events`` classes), ``export_recording(path, fmt, out)``, ``list_recordings(dir)``,
``default_recordings_dir()``; on an engine ``export_call(call_id, fmt)``, ``recordings()``, ``recordings_dir``.
Attached to engines elsewhere (``ava-console --attach URL``): ``open_remote(url)`` → a ``RemoteEngines``
(``redis://`` / ``rediss://``: every engine sharing that store; ``http(s)://``: one engine's HTTP API) with
``connect()``, ``close()``, ``engines()`` → ``{id: EngineInfo}``, ``follow()`` → ``EngineJoined`` / ``RemoteEvent``
(engine id, stream entry id, the ``engine.events`` event) / ``EngineLost`` (``clean``, ``reason``), and
``send(engine_id, command, args, timeout_s)`` → the answer, for a command of ``REMOTE_COMMANDS`` (the engine
methods above, by name, with the same keyword arguments); ``RemoteError`` says what failed and where.
``call_ref(engine_id, call_id)`` / ``split_call_ref(ref)`` spell a call of an attached engine (``engine/call``).

The names are imported on first use (``engine.config`` and the CLI must not pay for the engine and its voice
stack), so ``import engine`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.core.version import __version__

if TYPE_CHECKING:
    from engine._compat._check import CompatError
    from engine._compat._check import private as dependency_private
    from engine.app import Engine
    from engine.calls.manager import CallError
    from engine.core.heap import freeze_startup_heap
    from engine.core.logs import configure_logging
    from engine.core.stats import percentile
    from engine.http.guard import browser_refusal
    from engine.mcp.signin import SignInError, open_in_browser
    from engine.mcp.token_store import forget_oauth_sign_in, oauth_sign_in_stored
    from engine.operator.tool_bench import UnknownTool, call_tool, tool_catalog
    from engine.recorder.codec import RecordingError, read_recording
    from engine.recorder.export import export_recording
    from engine.recorder.files import default_dir as default_recordings_dir
    from engine.recorder.files import list_recordings
    from engine.redaction.redactor import RedactingFilter, Redactor
    from engine.remote import open_remote
    from engine.remote.base import COMMANDS as REMOTE_COMMANDS
    from engine.remote.base import (
        EngineInfo,
        EngineJoined,
        EngineLost,
        RemoteEngines,
        RemoteError,
        RemoteEvent,
        call_ref,
        split_call_ref,
    )
    from engine.sessions.snapshot import CallInfo, OutboxMessage, ToolState
    from engine.tools.approvals import ApprovalError, PendingApproval
    from engine.voice.backend import AudioBackend, AudioUnavailable
    from engine.voice.device_backend import DeviceInfo, DeviceSpec
    from engine.voice.softphone import BackendFactory, Softphone

#: name -> (module, attribute) of every public name.
_PUBLIC: dict[str, tuple[str, str]] = {
    "Engine": ("engine.app", "Engine"),
    "CallError": ("engine.calls.manager", "CallError"),
    "CallInfo": ("engine.sessions.snapshot", "CallInfo"),
    "ToolState": ("engine.sessions.snapshot", "ToolState"),
    "OutboxMessage": ("engine.sessions.snapshot", "OutboxMessage"),
    "ApprovalError": ("engine.tools.approvals", "ApprovalError"),
    "PendingApproval": ("engine.tools.approvals", "PendingApproval"),
    "configure_logging": ("engine.core.logs", "configure_logging"),
    "freeze_startup_heap": ("engine.core.heap", "freeze_startup_heap"),
    "percentile": ("engine.core.stats", "percentile"),
    "tool_catalog": ("engine.operator.tool_bench", "tool_catalog"),
    "call_tool": ("engine.operator.tool_bench", "call_tool"),
    "UnknownTool": ("engine.operator.tool_bench", "UnknownTool"),
    "Softphone": ("engine.voice.softphone", "Softphone"),
    "BackendFactory": ("engine.voice.softphone", "BackendFactory"),
    "AudioBackend": ("engine.voice.backend", "AudioBackend"),
    "AudioUnavailable": ("engine.voice.backend", "AudioUnavailable"),
    "DeviceInfo": ("engine.voice.device_backend", "DeviceInfo"),
    "DeviceSpec": ("engine.voice.device_backend", "DeviceSpec"),
    "read_recording": ("engine.recorder.codec", "read_recording"),
    "RecordingError": ("engine.recorder.codec", "RecordingError"),
    "export_recording": ("engine.recorder.export", "export_recording"),
    "list_recordings": ("engine.recorder.files", "list_recordings"),
    "default_recordings_dir": ("engine.recorder.files", "default_dir"),
    "SignInError": ("engine.mcp.signin", "SignInError"),
    "open_in_browser": ("engine.mcp.signin", "open_in_browser"),
    "oauth_sign_in_stored": ("engine.mcp.token_store", "oauth_sign_in_stored"),
    "forget_oauth_sign_in": ("engine.mcp.token_store", "forget_oauth_sign_in"),
    "open_remote": ("engine.remote", "open_remote"),
    "REMOTE_COMMANDS": ("engine.remote.base", "COMMANDS"),
    "RemoteEngines": ("engine.remote.base", "RemoteEngines"),
    "RemoteError": ("engine.remote.base", "RemoteError"),
    "RemoteEvent": ("engine.remote.base", "RemoteEvent"),
    "EngineInfo": ("engine.remote.base", "EngineInfo"),
    "EngineJoined": ("engine.remote.base", "EngineJoined"),
    "EngineLost": ("engine.remote.base", "EngineLost"),
    "call_ref": ("engine.remote.base", "call_ref"),
    "browser_refusal": ("engine.http.guard", "browser_refusal"),
    "Redactor": ("engine.redaction.redactor", "Redactor"),
    "dependency_private": ("engine._compat._check", "private"),
    "CompatError": ("engine._compat._check", "CompatError"),
    "RedactingFilter": ("engine.redaction.redactor", "RedactingFilter"),
    "split_call_ref": ("engine.remote.base", "split_call_ref"),
}

__all__ = [
    "REMOTE_COMMANDS",
    "ApprovalError",
    "AudioBackend",
    "AudioUnavailable",
    "BackendFactory",
    "CallError",
    "CallInfo",
    "CompatError",
    "DeviceInfo",
    "DeviceSpec",
    "Engine",
    "EngineInfo",
    "EngineJoined",
    "EngineLost",
    "OutboxMessage",
    "PendingApproval",
    "RecordingError",
    "RedactingFilter",
    "Redactor",
    "RemoteEngines",
    "RemoteError",
    "RemoteEvent",
    "SignInError",
    "Softphone",
    "ToolState",
    "UnknownTool",
    "__version__",
    "browser_refusal",
    "call_ref",
    "call_tool",
    "configure_logging",
    "default_recordings_dir",
    "dependency_private",
    "export_recording",
    "forget_oauth_sign_in",
    "freeze_startup_heap",
    "list_audio_devices",
    "list_recordings",
    "oauth_sign_in_stored",
    "open_in_browser",
    "open_remote",
    "percentile",
    "read_recording",
    "split_call_ref",
    "tool_catalog",
]


def list_audio_devices(rescan: bool = False) -> list[DeviceInfo]:
    """The sound card's input and output devices (``AudioUnavailable`` without PortAudio)."""
    from engine.voice import device_backend

    return device_backend.list_devices(rescan)


def __getattr__(name: str) -> Any:
    try:
        module, attr = _PUBLIC[name]
    except KeyError:
        raise AttributeError(f"module 'engine' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value
