"""The ``contexts:`` section: what a call runs with (provider, prompt, greeting, tools, tier policy).

Only the per-context shape lives here; that ``provider`` names a configured provider is checked by the root
``Settings``, which sees both sections.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any, Literal

from pydantic import Field, GetJsonSchemaHandler, field_validator, model_validator
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema

from engine.config.models.common import FieldError, Strict, TierName
from engine.config.models.tools import operator_address

#: An ``approve:`` entry: an exposed name, or a shell-style pattern of one (``mcp_files_*``).
_APPROVE_ENTRY = re.compile(r"^[a-z0-9_*?\[\]!-]{1,64}$")


class ContextTierConfig(Strict):
    default: TierName = "standard"
    mode: Literal["auto", "fixed"] = "auto"


#: Who answers an MCP server's elicitation (a question a tool asks mid-call) on calls of a context.
ElicitationAsk = Literal["caller", "operator", "decline"]
#: What a URL-mode question (open this link) does on a call whose questions go to the caller.
ElicitationUrl = Literal["decline", "email"]


class ElicitationConfig(Strict):
    """``contexts.<name>.elicitation``: who answers when a tool asks for input mid-call (engine.elicitation).
    Written as a word (``elicitation: caller``) or in full (``elicitation: {ask: operator, timeout_ms: 30000}``)."""

    ask: ElicitationAsk = Field(
        default="decline",
        description="caller: the question is spoken to the caller and the answer parsed and confirmed; operator: a "
        "form in the console; decline: the server is told no at once.",
    )
    timeout_ms: int = Field(
        default=30_000,
        gt=0,
        le=600_000,
        description="How long the whole question may take (the tool's own timeout stops while it waits); then it is "
        "declined.",
    )
    attempts: int = Field(
        default=2, ge=1, le=5, description="caller: unparsable or missing answers before the question is declined."
    )
    url: ElicitationUrl = Field(
        default="decline",
        description="caller: a URL-mode question (open this link) is declined with a spoken reason (decline), or "
        "the link is e-mailed through the outbox and the server told accept (email; needs tools.email.enabled).",
    )
    url_to: str = Field(
        default="caller",
        description="url: email: where the link goes: 'caller' (the address the caller confirmed in this call, "
        "else asked by voice and read back) or a fixed e-mail address.",
    )

    @field_validator("url_to")
    @classmethod
    def _url_to(cls, v: str) -> str:
        if v == "caller":
            return v
        try:
            return operator_address(v)
        except ValueError as e:
            raise ValueError(f"url_to must be 'caller' or an e-mail address: {e}") from None

    @model_validator(mode="before")
    @classmethod
    def _word(cls, data: Any) -> Any:
        return {"ask": data} if isinstance(data, str) else data

    @classmethod
    def __get_pydantic_json_schema__(cls, core: CoreSchema, handler: GetJsonSchemaHandler) -> JsonSchemaValue:
        """The word form (``elicitation: caller``) is valid YAML for editors too."""
        return {"anyOf": [{"type": "string", "enum": ["caller", "operator", "decline"]}, handler(core)]}


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
    #: Tools (exposed names or patterns, as in ``tools``) that wait for the operator's approval before they run,
    #: on top of those whose server declares them destructive (engine.tools.approvals).
    approve: list[str] = Field(default_factory=list)
    #: Who answers a tool's mid-call questions (MCP elicitation): caller, operator or decline (the default).
    elicitation: ElicitationConfig = Field(default_factory=ElicitationConfig)
    #: The call's budget (engine.usage): the operator is warned at 80 %, at 100 % ``on_budget`` applies.
    max_cost: float | None = Field(default=None, gt=0, allow_inf_nan=False, description="US dollars per call")
    max_tokens: int | None = Field(default=None, gt=0, description="tokens (input + output) per call")
    on_budget: Literal["wrap_up", "ask_operator"] = Field(
        default="wrap_up", description="at 100 %: the agent says goodbye and ends the call, or the operator decides"
    )

    @model_validator(mode="after")
    def _approve_among_tools(self) -> ContextConfig:
        """An ``approve:`` entry that names no tool of this context is a typo that would leave a tool unguarded."""
        for i, entry in enumerate(self.approve):
            if not _APPROVE_ENTRY.match(entry):
                raise FieldError(
                    ("approve", i),
                    f"{entry!r} is not an exposed tool name or pattern (lowercase letters, digits, '_', '*', '?')",
                )
            if not any(_covers(t, entry) for t in self.tools):
                listed = ", ".join(self.tools) or "none"
                raise FieldError(
                    ("approve", i),
                    f"{entry!r} is not among this context's tools ({listed}), so it would never be asked for; "
                    "list the tool under 'tools' too, or fix its name",
                )
        return self


def _covers(tools_entry: str, approve_entry: str) -> bool:
    """Whether the ``tools`` entry lets through a tool the ``approve`` entry names (the same text, a name the
    pattern allows, or a pattern whose names a ``tools`` pattern allows, judged by its literal text)."""
    return (
        tools_entry == approve_entry
        or fnmatch.fnmatchcase(approve_entry, tools_entry)
        or fnmatch.fnmatchcase(tools_entry, approve_entry)
    )
