"""The config system's public API: load, validate, edit and save the YAML config; secrets; JSON schema.

Where the config lives (``resolve_config_path``): an explicit ``--config PATH`` wins; otherwise
``platformdirs.user_config_dir("ava-console")/config.yaml``, which is created on first run as a copy of the
demo config shipped with the code. The demo is found relative to this package, ``<repo>/config/default.yaml``
(``engine`` is a top-level package beside ``config/``), which holds for a source checkout and an editable
install; a wheel must carry that file at the same relative place.

The names are imported on first use (``_LAZY``), so ``resolve_config_path`` and ``import engine.config`` stay cheap
for the console's first frame and for CLI commands that never load a config.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import platformdirs

if TYPE_CHECKING:
    from engine.config.document import ConfigDocument
    from engine.config.errors import ConfigConflictError, ConfigError, ConfigIssue, format_path
    from engine.config.expand import ExpansionError
    from engine.config.fragment import dump_yaml_fragment, parse_yaml_fragment
    from engine.config.loader import load_settings, load_settings_text, references
    from engine.config.mcp_import import ImportResult, McpImportError, import_mcp_json
    from engine.config.models import Settings
    from engine.config.schema import json_schema, json_schema_text
    from engine.config.secrets import (
        SERVICE,
        SecretsError,
        delete_secret,
        get_secret,
        list_secrets,
        looks_like_secret,
        mask,
        secret_name_for,
        set_secret,
    )

#: name -> module of every name this package re-exports, imported on first use: pydantic's models, ruamel.yaml and
#: keyring cost ~0.4 s to import, which the console's first frame and ``ava-engine --help`` must not pay.
_LAZY: dict[str, str] = {
    "ConfigDocument": "engine.config.document",
    "ConfigConflictError": "engine.config.errors",
    "ConfigError": "engine.config.errors",
    "ConfigIssue": "engine.config.errors",
    "format_path": "engine.config.errors",
    "ExpansionError": "engine.config.expand",
    "dump_yaml_fragment": "engine.config.fragment",
    "parse_yaml_fragment": "engine.config.fragment",
    "load_settings": "engine.config.loader",
    "load_settings_text": "engine.config.loader",
    "references": "engine.config.loader",
    "ImportResult": "engine.config.mcp_import",
    "McpImportError": "engine.config.mcp_import",
    "import_mcp_json": "engine.config.mcp_import",
    "Settings": "engine.config.models",
    "json_schema": "engine.config.schema",
    "json_schema_text": "engine.config.schema",
    "SERVICE": "engine.config.secrets",
    "SecretsError": "engine.config.secrets",
    "delete_secret": "engine.config.secrets",
    "get_secret": "engine.config.secrets",
    "list_secrets": "engine.config.secrets",
    "looks_like_secret": "engine.config.secrets",
    "mask": "engine.config.secrets",
    "secret_name_for": "engine.config.secrets",
    "set_secret": "engine.config.secrets",
}

log = logging.getLogger(__name__)

APP_NAME = "ava-console"
CONFIG_FILE_NAME = "config.yaml"
DEFAULT_CONFIG = Path(__file__).resolve().parents[2] / "config" / "default.yaml"

__all__ = [
    "DEFAULT_CONFIG",
    "SERVICE",
    "ConfigConflictError",
    "ConfigDocument",
    "ConfigError",
    "ConfigIssue",
    "ExpansionError",
    "ImportResult",
    "McpImportError",
    "SecretsError",
    "Settings",
    "delete_secret",
    "dump_yaml_fragment",
    "format_path",
    "get_secret",
    "import_mcp_json",
    "json_schema",
    "json_schema_text",
    "list_secrets",
    "load_settings",
    "load_settings_text",
    "looks_like_secret",
    "mask",
    "parse_yaml_fragment",
    "references",
    "resolve_config_path",
    "secret_name_for",
    "set_secret",
    "user_config_path",
]


def user_config_path() -> Path:
    """Where the operator's own config lives when no ``--config`` is given."""
    return Path(platformdirs.user_config_dir(APP_NAME)) / CONFIG_FILE_NAME


def resolve_config_path(explicit: str | os.PathLike[str] | None, *, default: Path = DEFAULT_CONFIG) -> Path:
    """The config file to use: ``explicit`` as given (``~`` expanded), else the user config, created from the
    demo config on first run. Raises ``ConfigError`` when the demo config cannot be found or copied."""
    if explicit is not None and os.fspath(explicit) != "":
        return Path(explicit).expanduser()
    target = user_config_path()
    if target.exists():
        return target
    from engine.config.atomic import atomic_write
    from engine.config.errors import ConfigError

    if not default.is_file():
        raise ConfigError.single(
            os.fspath(default), f"the demo config to copy to {target} is missing; pass --config PATH"
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, default.read_bytes())  # never a half-copied file, even if two start at once
    except OSError as exc:
        raise ConfigError.single(
            os.fspath(target), f"cannot create the user config from the demo: {exc.strerror or exc}"
        ) from None
    log.info("created %s from the demo config %s", target, default)
    return target


def __getattr__(name: str) -> Any:
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'engine.config' has no attribute {name!r}") from None
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
