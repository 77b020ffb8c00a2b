"""Every use of a dependency's private API in the engine, one module per dependency (issue 35 item 5).

Why it exists: a private name can change in any release, minor or patch. Kept here, each one is looked up through
``private()`` (a clear ``CompatError`` naming the dependency, its version and what was relied on, instead of an
``AttributeError`` deep in a call), is pinned by the dependency range in pyproject.toml, and is held by a test in
tests/engine/compat/ that fails when the dependency changes it.

- ``mcp_sdk``: the stdio spawner ``mcp.client.stdio._create_platform_compatible_process`` (wrapped once, so every
  stdio child the SDK or the engine spawns is reported), ``_get_executable_command``, ``_stop_server_process``;
  ``mcp.shared._httpx_utils.create_mcp_http_client``; ``OAuthClientProvider._get_token_endpoint`` and the private
  steps engine/mcp/oauth.py overrides (``OAUTH_OVERRIDES``).
- ``anyio_streams``: the asyncio ``StreamWriter`` inside anyio's process stdin (``_stream``).
- ``stdlib``: asyncio's ``_current_tasks``, ``re._parser``, argparse's ``_actions`` and ``_SubParsersAction``.
- ``portaudio``: sounddevice's ``_terminate`` / ``_initialize`` (re-scan the devices).
- ``prometheus``: a histogram child's ``_sum`` and ``_buckets`` (tallies flushed without one observe() each).
- ``otel``: the OTLP/HTTP span exporter's ``_client.export(bytes)`` (traces encoded by engine/telemetry/otlp.py).

The console's (Textual's) are in console/_compat.py: the engine never imports Textual.
"""
