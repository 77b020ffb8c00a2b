"""Tool names per provider: every provider gets names its API accepts, and its answers map back to ours.

Exposed names (``mcp_dice_roll``) already follow the product's own rule, but tools can come from anywhere
(``expose_as``, extra tools, imported configs), and each provider has its own pattern and length limit
(reference/wire-formats.md §0). A ``NameMap`` is built for one provider and one tool list: names that already
satisfy the rule are kept as they are; the others are sanitised, and a sanitised name that collides with another
(or is cut at the length limit) gets a stable short hash of the exposed name as suffix, so the same tool always
gets the same provider name and two tools never share one.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class NameRule:
    """One provider's function-name rule: allowed characters, allowed first character, maximum length."""

    id: str
    allowed: str  # a character class body, e.g. "A-Za-z0-9_-"
    first: str  # a character class body for the first character
    max_len: int
    pattern: re.Pattern[str] = field(init=False, repr=False, compare=False)
    _bad: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "pattern", re.compile(f"^[{self.first}][{self.allowed}]{{0,{self.max_len - 1}}}$"))
        object.__setattr__(self, "_bad", re.compile(f"[^{self.allowed}]"))

    def valid(self, name: str) -> bool:
        return bool(self.pattern.match(name))

    def clean(self, name: str) -> str:
        """Replace every character the rule rejects by ``_`` and fix the first character (no length cut)."""
        out = self._bad.sub("_", name) or "_"
        if not re.match(f"[{self.first}]", out[0]):
            out = "_" + out if re.match(f"[{self.first}]", "_") else "t" + out
        return out


#: OpenAI (Chat, Responses, Realtime), Anthropic, Deepgram, ElevenLabs, Ollama: ^[a-zA-Z0-9_-]{1,64}$
OPENAI_RULE = NameRule("openai", "A-Za-z0-9_-", "A-Za-z0-9_-", 64)
#: Gemini (generateContent and Live): letter or underscore first; Gemini also allows "." and ":" but Vertex does
#: not document them, so the portable subset is used.
GEMINI_RULE = NameRule("gemini", "A-Za-z0-9_-", "A-Za-z_", 64)
#: Gemini parameter (property) names in the OpenAPI ``parameters`` mode: "must start with a letter or an
#: underscore, only a-z, A-Z, 0-9 and underscores, at most 64" (google-genai ``FunctionDeclaration.parameters``).
GEMINI_PARAM_RULE = NameRule("gemini_param", "A-Za-z0-9_", "A-Za-z_", 64)
#: Scripted / pipeline: canonical names (the product's own rule is enforced where tools are registered).
CANONICAL_RULE = NameRule("canonical", "\\S", "\\S", 10_000)


def short_hash(text: str, n: int = 6) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


class NameMap:
    """Exposed name ⇄ provider name for one provider and one tool list."""

    __slots__ = ("_to_exposed", "_to_provider", "changed", "rule")

    def __init__(self, rule: NameRule, exposed: Iterable[str]) -> None:
        self.rule = rule
        self._to_provider: dict[str, str] = {}
        self._to_exposed: dict[str, str] = {}
        #: exposed name -> provider name, for the names that had to change (logged by the renderer).
        self.changed: dict[str, str] = {}
        names = list(dict.fromkeys(exposed))
        # Valid names first, so a tool that already satisfies the rule never loses its name to a sanitised one.
        for name in names:
            if rule.valid(name):
                self._bind(name, name)
        for name in sorted(n for n in names if not rule.valid(n)):
            self._bind(name, self._fit(name))

    def _fit(self, name: str) -> str:
        base = self.rule.clean(name)
        if len(base) <= self.rule.max_len and base not in self._to_exposed:
            return base
        suffix = "_" + short_hash(name)
        cand = base[: self.rule.max_len - len(suffix)] + suffix
        n = 8
        while cand in self._to_exposed:  # a hash collision between two suffixed names: lengthen the hash
            suffix = "_" + short_hash(name, n)
            cand = base[: self.rule.max_len - len(suffix)] + suffix
            n += 2
        return cand

    def _bind(self, exposed: str, provider: str) -> None:
        self._to_provider[exposed] = provider
        self._to_exposed[provider] = exposed
        if provider != exposed:
            self.changed[exposed] = provider

    def provider_name(self, exposed: str) -> str:
        """The provider's name for a tool; a tool outside this map (older history) is sanitised on its own."""
        got = self._to_provider.get(exposed)
        if got is not None:
            return got
        if self.rule.valid(exposed):
            return exposed
        base = self.rule.clean(exposed)
        if len(base) <= self.rule.max_len:
            return base
        suffix = "_" + short_hash(exposed)
        return base[: self.rule.max_len - len(suffix)] + suffix

    def exposed_name(self, provider: str) -> str:
        """The exposed name for a name the model used (unknown names pass through: the engine rejects them)."""
        return self._to_exposed.get(provider, provider)

    def items(self) -> list[tuple[str, str]]:
        return list(self._to_provider.items())


@dataclass(slots=True)
class ArgNames:
    """The way back from parameter names fitted to a provider's rule to the schema's own, for one object schema
    and (nested) its properties' values, array items and map values. Empty when no name changed."""

    renamed: dict[str, str] = field(default_factory=dict)  # provider name -> the schema's name
    props: dict[str, ArgNames] = field(default_factory=dict)  # provider name -> its value's names
    items: ArgNames | None = None
    values: ArgNames | None = None  # additionalProperties: for keys that are not declared properties
    declared: set[str] = field(default_factory=set)  # provider names of the declared properties

    def __bool__(self) -> bool:
        return bool(self.renamed or self.props or self.items or self.values)

    def merge(self, other: ArgNames) -> None:
        """Add ``other``'s names (an ``anyOf`` branch of the same value)."""
        self.renamed.update(other.renamed)
        self.props.update(other.props)
        self.items = self.items or other.items
        self.values = self.values or other.values
        self.declared |= other.declared

    def restore(self, value: Any) -> Any:
        """``value`` (arguments as the model sent them) with the schema's own names again; anything else as is."""
        if isinstance(value, dict):
            out: dict[Any, Any] = {}
            for k, v in value.items():
                sub = self.props.get(k) if k in self.declared else self.values
                out[self.renamed.get(k, k)] = sub.restore(v) if sub else v
            return out
        if isinstance(value, list) and self.items:
            return [self.items.restore(v) for v in value]
        return value
