"""Pydantic models for the whole config file, one module per section, re-exported here.

Every section of the YAML has a model; unknown keys are errors (``extra="forbid"``) so a typo is reported with
its file, line and key path by the loader instead of being silently ignored. Credentials are ``SecretStr`` so
they never print. The top-level shape is fixed by DESIGN.md. Import from ``engine.config.models``; the section
modules are an internal layout:

- ``common``: the ``Strict`` base, ``FieldError`` and the tier names
- ``engine``: ``engine:`` (HTTP, logging, the engine's own MCP endpoint)
- ``providers``: ``providers:``
- ``budget``: ``budget:``
- ``mcp``: ``mcp:`` (servers, their tools, naming rules)
- ``contexts``: ``contexts:``
- ``tools``: ``tools:`` (built-in tools)
- ``devices``: ``softphone:``, ``asterisk:``, ``console:``
- ``settings``: the root ``Settings`` and its cross-section checks
"""

from __future__ import annotations

from engine.config.models.budget import BudgetConfig, SelectorConfig, TiersConfig
from engine.config.models.common import FieldError, Strict, TierChoice, TierName
from engine.config.models.contexts import ContextConfig, ContextTierConfig, ElicitationConfig
from engine.config.models.devices import AsteriskConfig, ConsoleConfig, SoftphoneConfig
from engine.config.models.engine import EngineConfig, HttpConfig, LoggingConfig, McpEndpointConfig
from engine.config.models.mcp import (
    EXPOSED_NAME_RE,
    SERVER_ID_RE,
    McpConfig,
    McpServerConfig,
    McpToolConfig,
    OAuthConfig,
    RestartConfig,
    ServerAuthConfig,
    ServerDefaults,
    ServerId,
)
from engine.config.models.providers import ProviderConfig, ProviderType
from engine.config.models.settings import Settings
from engine.config.models.tools import BuiltinToolsConfig, EmailConfig, HangupConfig, TransferTarget

__all__ = [
    "EXPOSED_NAME_RE",
    "SERVER_ID_RE",
    "AsteriskConfig",
    "BudgetConfig",
    "BuiltinToolsConfig",
    "ConsoleConfig",
    "ContextConfig",
    "ContextTierConfig",
    "ElicitationConfig",
    "EmailConfig",
    "EngineConfig",
    "FieldError",
    "HangupConfig",
    "HttpConfig",
    "LoggingConfig",
    "McpConfig",
    "McpEndpointConfig",
    "McpServerConfig",
    "McpToolConfig",
    "OAuthConfig",
    "ProviderConfig",
    "ProviderType",
    "RestartConfig",
    "SelectorConfig",
    "ServerAuthConfig",
    "ServerDefaults",
    "ServerId",
    "Settings",
    "SoftphoneConfig",
    "Strict",
    "TierChoice",
    "TierName",
    "TiersConfig",
    "TransferTarget",
]
