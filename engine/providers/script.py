"""The scripted provider's dialog script: greeting, intents (regex → tool calls → reply), fallback.

Scripts live in YAML (``config/scripts/*.yaml``) and are read like the config file (YAML 1.2: ``on`` and ``no``
are text). Patterns are matched case-insensitively against what the caller said, and also against the same text
with number words turned into digits ("roll two d six" → "roll 2 d 6"), so the same script serves typed and
recognised speech. Named groups become tool arguments.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.config import ConfigError, parse_yaml_fragment


class ScriptError(ValueError):
    """A script that cannot be used; the message names the file and the intent or key."""


class ScriptToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    args: dict[str, Any] = Field(default_factory=dict)


class Intent(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    patterns: list[str]
    tools: list[ScriptToolCall] = Field(default_factory=list)
    reply: str = "{result}"
    error_reply: str | None = None
    examples: list[str] = Field(default_factory=list, description="Phrases a caller says (speech grammar).")

    @field_validator("patterns")
    @classmethod
    def _compile(cls, v: list[str]) -> list[str]:
        if not v:
            raise ValueError("needs at least one pattern")
        for p in v:
            try:
                re.compile(p)
            except re.error as e:
                raise ValueError(f"pattern {p!r} is not a valid regular expression: {e}") from e
        return v


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid")
    greeting: str | None = None
    intents: list[Intent] = Field(default_factory=list)
    fallback: str = "Sorry, I didn't catch that."

    def compiled(self) -> list[tuple[Intent, list[re.Pattern[str]]]]:
        return [(i, [re.compile(p, re.IGNORECASE) for p in i.patterns]) for i in self.intents]

    def phrases(self) -> list[str]:
        """Every example phrase, for building a speech grammar."""
        return [e for i in self.intents for e in i.examples]


#: The demo config's folder: relative paths that are not beside a copied config fall back to it.
SHIPPED_CONFIG_DIR = Path(__file__).resolve().parents[2] / "config"


def resolve_asset_path(name: str, base_dir: Path | None) -> Path:
    """A path from the config: absolute, else beside the config file, else beside the shipped demo config."""
    p = Path(name).expanduser()
    if p.is_absolute():
        return p
    candidates = [base_dir / p] if base_dir is not None else []
    candidates.append(SHIPPED_CONFIG_DIR / p)
    return next((c for c in candidates if c.exists()), candidates[0])


def load_script(path: str | Path) -> Script:
    p = Path(path)
    try:
        raw = parse_yaml_fragment(p.read_text(encoding="utf-8"), str(p))  # the config file's YAML dialect
    except FileNotFoundError as e:
        raise ScriptError(f"{p}: script file not found") from e
    except ConfigError as e:
        raise ScriptError(str(e)) from e
    if not isinstance(raw, dict):
        raise ScriptError(f"{p}: a script must be a mapping with greeting, intents and fallback")
    try:
        return Script.model_validate(raw)
    except ValidationError as e:
        problems = []
        for err in e.errors():
            loc = list(err["loc"])
            where = ".".join(str(x) for x in loc)
            if len(loc) >= 2 and loc[0] == "intents" and isinstance(loc[1], int):
                intents = raw.get("intents") or []
                if loc[1] < len(intents) and isinstance(intents[loc[1]], dict):
                    where = f"intent {intents[loc[1]].get('name', loc[1])!r}: " + ".".join(str(x) for x in loc[2:])
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                msg = "unknown key"
            problems.append(f"{p}: {where}: {msg}")
        raise ScriptError("\n".join(problems)) from e
