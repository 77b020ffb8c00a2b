"""Tool rendering for every provider type: names, schemas and declarations, cached per tool-view revision.

``render_declarations(provider_type, view_or_declarations)`` is the one entry point the CLI (``ava-engine tools
--provider TYPE --json``) and the realtime adapters use; ``ToolRenderer`` adds the per-call cache the text
adapters use on every request: declarations are re-rendered only when the view key changes (the view's key
changes whenever the tools shown to the call may have changed), so a cached request costs one dict lookup.
Each schema transformation is logged once per provider type and tool.
"""

from __future__ import annotations

import json
import logging
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from engine.providers.rendering.declarations import (
    NON_STRICT,
    PROVIDER_TYPES,
    STRICT_TYPES,
    GeminiSchemaMode,
    check_type,
    name_rule,
    render_declaration,
    wrap_tools,
)
from engine.providers.rendering.limits import TOOL_LIMITS, select
from engine.providers.rendering.names import ArgNames, NameMap
from engine.providers.rendering.schemas import Schema
from engine.tools.view import ToolView

__all__ = ["PROVIDER_TYPES", "RenderedTools", "ToolRenderer", "render_declarations", "render_tools"]

log = logging.getLogger(__name__)
_LOGGED: set[tuple[str, str, str]] = set()
_LOGGED_MAX = 20_000


@dataclass(frozen=True, slots=True)
class RenderedTools:
    """The tools array of one provider's request and the name map to read its answers back."""

    provider_type: str
    tools: list[dict[str, Any]]
    names: NameMap
    #: provider name -> the real schema, for tools sent in strict mode (their added nulls are stripped back).
    strict_originals: dict[str, Schema] = field(default_factory=dict)
    count: int = 0
    #: exposed name -> why a tool that asked for strict mode was sent non-strict.
    non_strict: dict[str, str] = field(default_factory=dict)
    #: exposed names left out because the view has more tools than the provider takes in one request.
    omitted: tuple[str, ...] = ()
    #: the provider's tools-per-request limit (None: no documented limit).
    limit: int | None = None
    #: provider name -> parameter names fitted to the provider's rule (Gemini's OpenAPI mode).
    arg_names: dict[str, ArgNames] = field(default_factory=dict)

    def restore_arguments(self, provider_name: str, arguments: Any) -> Any:
        """A call's arguments (an object, or its JSON text) with the tool's own parameter names again; as they
        came when the tool kept its names or the text is not a JSON object."""
        names = self.arg_names.get(provider_name)
        if names is None:
            return arguments
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except ValueError:
                return arguments
        return names.restore(arguments)

    def report(self) -> dict[str, Any]:
        """What ``ava-engine tools --json`` and the tools.omitted event say about this rendering."""
        return {
            "limit": self.limit,
            "omitted": list(self.omitted),
            "non_strict": [{"name": n, "reason": r} for n, r in self.non_strict.items()],
        }


def _log_once(provider_type: str, tool: str, notes: Sequence[str], renamed: str | None) -> None:
    items = list(notes)
    if renamed:
        items.insert(0, f"renamed to {renamed!r}")
    for note in items:
        key = (provider_type, tool, note)
        if key in _LOGGED:
            continue
        if len(_LOGGED) >= _LOGGED_MAX:
            _LOGGED.clear()
        _LOGGED.add(key)
        log.info("tool %s for %s: %s", tool, provider_type, note)


def _declarations(
    source: ToolView | Sequence[Mapping[str, Any]], limit: int | None
) -> tuple[list[Mapping[str, Any]], tuple[str, ...]]:
    """The declarations to render (at most ``limit``, chosen by ``select``) and the names left out."""
    if isinstance(source, ToolView):
        keep, omitted = select(source.definitions(), limit)
        return [d.declaration() for d in keep], tuple(d.name for d in omitted)
    out = list(source)
    for i, d in enumerate(out):
        if not isinstance(d, Mapping):
            raise TypeError(f"declaration {i} must be a mapping with name/description/input_schema, got {d!r:.80}")
    if limit is None or len(out) <= limit:
        return out, ()
    return out[:limit], tuple(str(d.get("name", "")) for d in out[limit:])


def _deferred(provider_type: str, source: ToolView | Sequence[Mapping[str, Any]]) -> frozenset[str]:
    """Deepgram: tools that are not idempotent (declared, or an MCP ``readOnlyHint``) wait for the caller's turn to
    be confirmed (``defer_until_eot``) instead of running on a speculative end of turn; a view knows which."""
    if provider_type != "deepgram_agent" or not isinstance(source, ToolView):
        return frozenset()
    return frozenset(d.name for d in source.definitions() if not d.latency.idempotent)


def render_tools(
    provider_type: str,
    source: ToolView | Sequence[Mapping[str, Any]],
    *,
    strict: bool = False,
    gemini_schema: GeminiSchemaMode = "json_schema",
) -> RenderedTools:
    """Render a view (or canonical declarations) for one provider type, uncached."""
    check_type(provider_type)
    limit = TOOL_LIMITS.get(provider_type)
    decls, omitted = _declarations(source, limit)
    if omitted:
        _log_once(provider_type, "(view)", [f"over the limit of {limit} tools, left out: {', '.join(omitted)}"], None)
    names = NameMap(name_rule(provider_type), [str(d.get("name", "")) for d in decls])
    use_strict = strict and provider_type in STRICT_TYPES
    deferred = _deferred(provider_type, source)
    out: list[dict[str, Any]] = []
    originals: dict[str, Schema] = {}
    arg_names: dict[str, ArgNames] = {}
    non_strict: dict[str, str] = {}
    for d in decls:
        exposed = str(d.get("name", ""))
        pname = names.provider_name(exposed)
        r = render_declaration(provider_type, d, pname, strict=use_strict, gemini_schema=gemini_schema)
        _log_once(provider_type, exposed, r.notes, names.changed.get(exposed))
        if r.arg_names is not None:
            arg_names[pname] = r.arg_names
        if r.strict_original is not None:
            originals[pname] = r.strict_original
        elif use_strict:
            non_strict[exposed] = next((n[len(NON_STRICT) :] for n in r.notes if n.startswith(NON_STRICT)), "")
        out.append({**r.tool, "defer_until_eot": True} if exposed in deferred else r.tool)
    tools = wrap_tools(provider_type, out)
    return RenderedTools(provider_type, tools, names, originals, len(out), non_strict, omitted, limit, arg_names)


def render_declarations(
    provider_type: str,
    view_or_declarations: ToolView | Sequence[Mapping[str, Any]],
    strict: bool = False,
    *,
    gemini_schema: GeminiSchemaMode = "json_schema",
) -> list[dict[str, Any]]:
    """Exactly the ``tools`` array a ``provider_type`` request (or session setup) carries; all 11 types."""
    return render_tools(provider_type, view_or_declarations, strict=strict, gemini_schema=gemini_schema).tools


class ToolRenderer:
    """Renders views for one provider instance, caching by view key (the call's ``tools_revision`` is in it)."""

    def __init__(
        self,
        provider_type: str,
        *,
        strict: bool = False,
        gemini_schema: GeminiSchemaMode = "json_schema",
        cache_size: int = 128,
    ) -> None:
        check_type(provider_type)
        self.provider_type = provider_type
        self.strict = strict
        self.gemini_schema: GeminiSchemaMode = gemini_schema
        self._cache: OrderedDict[tuple[object, ...], RenderedTools] = OrderedDict()
        self._size = cache_size
        self.renders = 0  # how many times a view was actually rendered (tests and the bench read it)

    def render(self, view: ToolView) -> RenderedTools:
        hit = self._cache.get(view.key)
        if hit is not None:
            self._cache.move_to_end(view.key)
            return hit
        rendered = render_tools(self.provider_type, view, strict=self.strict, gemini_schema=self.gemini_schema)
        self.renders += 1
        self._cache[view.key] = rendered
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return rendered

    def clear(self) -> None:
        self._cache.clear()
