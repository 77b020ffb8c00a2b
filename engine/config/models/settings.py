"""The root ``Settings`` model: the whole config file, one field per section, plus cross-section checks.

Checks that need two sections at once (a context's provider, a pipeline's brain, Asterisk's default context)
live here because no single section can see the names the others define.
"""

from __future__ import annotations

from pydantic import Field, PrivateAttr, model_validator

from engine.config.models.budget import BudgetConfig
from engine.config.models.common import FieldError, Strict
from engine.config.models.contexts import ContextConfig
from engine.config.models.devices import AsteriskConfig, ConsoleConfig, SoftphoneConfig
from engine.config.models.engine import EngineConfig
from engine.config.models.mcp import McpConfig
from engine.config.models.providers import ProviderConfig
from engine.config.models.recording import RecordingConfig
from engine.config.models.tools import BuiltinToolsConfig


class Settings(Strict):
    engine: EngineConfig = Field(default_factory=EngineConfig)
    providers: dict[str, ProviderConfig] = Field(default_factory=dict)
    budget: BudgetConfig = Field(default_factory=BudgetConfig)
    mcp: McpConfig = Field(default_factory=McpConfig)
    contexts: dict[str, ContextConfig] = Field(default_factory=dict)
    tools: BuiltinToolsConfig = Field(default_factory=BuiltinToolsConfig)
    softphone: SoftphoneConfig = Field(default_factory=SoftphoneConfig)
    asterisk: AsteriskConfig = Field(default_factory=AsteriskConfig)
    console: ConsoleConfig = Field(default_factory=ConsoleConfig)
    recording: RecordingConfig = Field(default_factory=RecordingConfig)
    #: Values the loader substituted from the keyring, or from the environment into a credential place (an
    #: ``env:``/``headers:`` map, a command line): ``engine.redaction.redactor`` masks them like ``SecretStr`` values.
    _expanded_secrets: frozenset[str] = PrivateAttr(default_factory=frozenset)

    @model_validator(mode="after")
    def _contexts_name_providers(self) -> Settings:
        known = ", ".join(sorted(self.providers)) or "none"
        for name, ctx in self.contexts.items():
            if ctx.provider not in self.providers:
                raise FieldError(
                    ("contexts", name, "provider"),
                    f"{ctx.provider!r} is not a configured provider (known: {known})",
                )
        for name, prov in self.providers.items():
            if prov.brain is not None and (prov.brain not in self.providers or prov.brain == name):
                raise FieldError(
                    ("providers", name, "brain"),
                    f"{prov.brain!r} is not another configured provider (known: {known})",
                )
        for name, ctx in self.contexts.items():
            if ctx.elicitation.url == "email" and not self.tools.email.enabled:
                raise FieldError(
                    ("contexts", name, "elicitation", "url"),
                    f"context {name!r} sends links by e-mail (elicitation.url: email) but e-mail is off: set "
                    "tools.email.enabled (with its from_address), or use url: decline",
                )
        if self.asterisk.default_context is not None and self.asterisk.default_context not in self.contexts:
            contexts = ", ".join(sorted(self.contexts)) or "none"
            raise FieldError(
                ("asterisk", "default_context"),
                f"{self.asterisk.default_context!r} is not a configured context (known: {contexts})",
            )
        return self
