"""The ``contexts:`` section: what a call runs with (provider, prompt, greeting, tools, tier policy).

Only the per-context shape lives here; that ``provider`` names a configured provider is checked by the root
``Settings``, which sees both sections.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from engine.config.models.common import Strict, TierName


class ContextTierConfig(Strict):
    default: TierName = "standard"
    mode: Literal["auto", "fixed"] = "auto"


class ContextConfig(Strict):
    provider: str
    prompt: str = ""
    greeting: str | None = None
    tools: list[str] = Field(default_factory=list)
    tier: ContextTierConfig = Field(default_factory=ContextTierConfig)
    farewell: str | None = None
    #: Send the admin a summary when a call of this context ends: true/false overrides ``tools.email.summary``
    #: for this context (None: the global setting).
    email_summary: bool | None = None
