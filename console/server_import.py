"""Importing MCP servers from a Claude Desktop / VS Code JSON file into the config, from the Servers screen (``i``).

Why it exists: the flow (the one importer ``ava-engine import-mcp-json`` runs, the VS Code inputs form, the diff and
the keyring) is not the Servers screen's table; kept apart like ``server_remove``. The diff's title says where the
moved credentials go in the engine's words (``keyring_state().where``: a plain-file keyring is named UNENCRYPTED),
read in the worker thread with the file, since keyring may block the first time it is asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from console.config_flow import save_document

if TYPE_CHECKING:
    from console.console_port import Console
    from engine.config import ConfigDocument, ImportResult


def import_servers(app: Console, path: str, plaintext: bool = False) -> None:
    """Blocking (a worker thread): read the file with the one importer, then ask for its inputs and show the diff."""
    from engine.config import ConfigDocument, ConfigError, McpImportError, import_mcp_json
    from engine.config.secrets import keyring_state

    try:
        doc = ConfigDocument.load(app.config_path)
        # the same importer as `ava-engine import-mcp-json` (plaintext: its --plaintext-secrets)
        result = import_mcp_json(doc, path, plaintext_secrets=plaintext)
    except (McpImportError, ConfigError, KeyError) as e:
        app.call_from_thread(app.notify, f"import failed: {e}", title="servers", severity="error")
        return
    if result.warnings():
        app.call_from_thread(app.notify, "\n".join(result.warnings()), title="import", severity="warning", timeout=15)
    if not result.added:
        app.call_from_thread(app.notify, "\n".join(result.summary()), title="import")
        return
    title = f"Import {len(result.added)} server(s) from {path}: {', '.join(result.added)}"
    if result.asks:  # VS Code inputs not in the keyring yet: the operator types them in a form first
        app.call_from_thread(_ask_inputs, app, doc, result, title, plaintext, keyring_state().where)
    else:
        app.call_from_thread(_save, app, doc, result, title, plaintext, keyring_state().where)


def _ask_inputs(
    app: Console, doc: ConfigDocument, result: ImportResult, title: str, plaintext: bool, where: str
) -> None:
    from console.screens.import_dialog import InputsScreen

    def answered(values: list[str] | None) -> None:
        if values is None:
            app.notify("import cancelled: nothing written", title="import")
            return
        for ask, value in zip(list(result.asks), values, strict=True):
            result.answer(ask, value)
        _save(app, doc, result, title, plaintext, where)

    app.push_screen(InputsScreen(list(result.asks)), answered)


def _save(app: Console, doc: ConfigDocument, result: ImportResult, title: str, plaintext: bool, where: str) -> None:
    from engine.config.mcp_import import check_import, store_secrets

    def before_write() -> None:  # check's validation first: a refusal writes nothing, keyring included
        check_import(doc, result)
        store_secrets(result)

    if result.secrets:  # an answered input joins them
        title += f" (to {where}: {', '.join(sorted(result.secrets))})"
    hide = [*(_literal_values(result.added) if plaintext else ()), *result.secrets.values()]
    save_document(app, doc, title, hide=hide, before_write=before_write)


def _literal_values(servers: dict[str, dict[str, Any]]) -> list[str]:
    """The credential-looking values kept in plain text (by choice): masked in the diff all the same."""
    from engine.config import looks_like_secret

    return [
        str(v)
        for cfg in servers.values()
        for kind in ("env", "headers")
        for k, v in (cfg.get(kind) or {}).items()
        if looks_like_secret(str(k), str(v))
    ]
