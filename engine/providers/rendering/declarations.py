"""One canonical declaration → the tool object one provider type expects (names, schema profile, wrapper).

Canonical declarations are ``{name, description, input_schema}`` (``ToolDefinition.declaration()``). Each of the
eleven provider types of DESIGN.md gets its own wrapper (reference/wire-formats.md §0-§9), its name rule and its
schema profile: lossless JSON Schema where the API takes it (OpenAI, Anthropic, Gemini ``parametersJsonSchema``),
``$ref`` inlined where the consumer cannot resolve references (Ollama, Deepgram), down-converted dialects where
the API demands them (Gemini ``parameters``, ElevenLabs), and OpenAI strict mode on request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from engine.config.models.providers import ProviderType
from engine.providers.rendering.names import CANONICAL_RULE, GEMINI_RULE, OPENAI_RULE, ArgNames, NameRule
from engine.providers.rendering.schemas import (
    Notes,
    Schema,
    SchemaError,
    copy_schema,
    drop_vendor_keys,
    inline_refs,
    object_root,
    resolve_root_ref,
    with_array_items,
)
from engine.providers.rendering.strict import NotStrictable, strict_schema
from engine.providers.rendering.subset import to_elevenlabs, to_gemini_openapi, to_ollama

#: Every provider type the config accepts, in the config model's order.
PROVIDER_TYPES: tuple[str, ...] = get_args(ProviderType)
STRICT_TYPES = frozenset({"openai_chat", "openai_responses"})
OPENAI_TYPES = frozenset({"openai_chat", "openai_responses", "openai_realtime"})
#: The note that says a tool asked for strict mode was sent non-strict (``tools --json`` lists these).
NON_STRICT = "sent non-strict: "
GeminiSchemaMode = Literal["json_schema", "openapi"]
GEMINI_MAX_PER_TOOL = 512

NAME_RULES: dict[str, NameRule] = {
    "scripted": CANONICAL_RULE,
    "pipeline": CANONICAL_RULE,
    "gemini": GEMINI_RULE,
    "gemini_live": GEMINI_RULE,
}


def name_rule(provider_type: str) -> NameRule:
    check_type(provider_type)
    return NAME_RULES.get(provider_type, OPENAI_RULE)


def check_type(provider_type: str) -> None:
    if provider_type not in PROVIDER_TYPES:
        raise ValueError(f"unknown provider type {provider_type!r} (known: {', '.join(PROVIDER_TYPES)})")


@dataclass(frozen=True, slots=True)
class RenderedDeclaration:
    """One tool as the provider receives it, plus what the adapter needs to map calls back."""

    tool: dict[str, Any]
    notes: tuple[str, ...]
    #: The tool's real schema when strict mode changed it (nulls for optional arguments are stripped back).
    strict_original: Schema | None = None
    #: Parameter names fitted to the provider's rule (Gemini's OpenAPI mode), to map the arguments back.
    arg_names: ArgNames | None = None


def render_schema(
    provider_type: str,
    schema: Any,
    *,
    strict: bool = False,
    gemini_schema: GeminiSchemaMode = "json_schema",
    arg_names: ArgNames | None = None,
) -> tuple[Schema, Notes, bool]:
    """(schema for the provider, notes, whether strict mode applies); ``arg_names`` collects renamed parameters."""
    notes: Notes = []
    s = copy_schema(schema)
    if provider_type in ("scripted", "pipeline"):
        return object_root(s, notes), notes, False
    if provider_type in ("openai_chat", "openai_responses") and strict:
        strict_notes: Notes = []
        try:
            base = object_root(resolve_root_ref(drop_vendor_keys(s, strict_notes), strict_notes), strict_notes)
            return strict_schema(base, strict_notes), notes + strict_notes, True
        except (NotStrictable, SchemaError) as e:
            notes.append(f"{NON_STRICT}{e}")
    if provider_type in OPENAI_TYPES:
        return with_array_items(object_root(s, notes), notes), notes, False
    if provider_type == "anthropic":
        return object_root(s, notes), notes, False
    if provider_type in ("gemini", "gemini_live"):
        if gemini_schema == "json_schema":
            return object_root(drop_vendor_keys(s, notes), notes), notes, False
        flat = object_root(drop_vendor_keys(inline_refs(s, notes), notes), notes)
        return to_gemini_openapi(flat, notes, names=arg_names), notes, False
    flat = object_root(drop_vendor_keys(inline_refs(s, notes), notes), notes)
    if provider_type == "elevenlabs_agent":
        return to_elevenlabs(flat, notes), notes, False
    if provider_type == "ollama":
        return to_ollama(flat, notes), notes, False
    # deepgram_agent: plain JSON Schema without references; arrays get ``items`` as for the OpenAI models it
    # passes the functions to (they refuse an array without them)
    return with_array_items(flat, notes), notes, False


def render_declaration(
    provider_type: str,
    decl: Mapping[str, Any],
    provider_name: str,
    *,
    strict: bool = False,
    gemini_schema: GeminiSchemaMode = "json_schema",
) -> RenderedDeclaration:
    """One canonical declaration rendered for ``provider_type`` under ``provider_name``."""
    check_type(provider_type)
    name = str(decl.get("name", ""))
    if not name:
        raise ValueError(f"tool declaration without a name: {dict(decl)!r:.200}")
    description = str(decl.get("description") or "")
    raw = decl.get("input_schema", decl.get("inputSchema", decl.get("parameters", {})))
    arg_names = ArgNames()
    try:
        schema, notes, is_strict = render_schema(
            provider_type, raw, strict=strict, gemini_schema=gemini_schema, arg_names=arg_names
        )
    except ValueError as e:
        raise ValueError(f"tool {name!r}: {e}") from e
    t = provider_type
    tool: dict[str, Any]
    if t in ("scripted", "pipeline"):
        tool = {"name": name, "description": description, "input_schema": schema}
    elif t == "openai_chat":
        fn: dict[str, Any] = {"name": provider_name, "description": description, "parameters": schema}
        if strict:
            fn["strict"] = is_strict
        tool = {"type": "function", "function": fn}
    elif t == "openai_responses":
        tool = {
            "type": "function",
            "name": provider_name,
            "description": description,
            "parameters": schema,
            "strict": is_strict,
        }
    elif t == "openai_realtime":
        tool = {"type": "function", "name": provider_name, "description": description, "parameters": schema}
    elif t == "anthropic":
        tool = {"name": provider_name, "description": description, "input_schema": schema}
    elif t in ("gemini", "gemini_live"):
        tool = {"name": provider_name, "description": description}
        if gemini_schema == "json_schema":
            tool["parametersJsonSchema"] = schema
        elif schema.get("properties"):
            tool["parameters"] = schema
    elif t == "ollama":
        tool = {
            "type": "function",
            "function": {"name": provider_name, "description": description, "parameters": schema},
        }
    elif t == "deepgram_agent":
        tool = {"name": provider_name, "description": description, "parameters": schema}
    else:  # elevenlabs_agent: a client tool (the engine answers it over the conversation socket)
        tool = {
            "type": "client",
            "name": provider_name,
            "description": description or provider_name,
            "parameters": schema,
            "expects_response": True,
        }
    return RenderedDeclaration(tool, tuple(notes), copy_schema(raw) if is_strict else None, arg_names or None)


def wrap_tools(provider_type: str, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request's ``tools`` array: Gemini groups declarations in Tool objects (≤512 each); others are flat."""
    if provider_type in ("gemini", "gemini_live"):
        if not tools:
            return []
        return [
            {"functionDeclarations": tools[i : i + GEMINI_MAX_PER_TOOL]}
            for i in range(0, len(tools), GEMINI_MAX_PER_TOOL)
        ]
    return tools
