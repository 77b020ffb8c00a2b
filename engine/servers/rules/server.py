"""The rules MCP server: ``search_rules(query, system)`` and ``get_rule(id)``.

Why it exists: a game master's assistant needs quick, ranked answers from the table's rules. The corpus is
our own original text shipped in ``assets/rules/`` (a generic d20 system and a generic d6 system).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp.server import MCPServer
from mcp.types import CallToolResult

from engine.servers.common import (
    ASSETS_DIR,
    READ_ONLY,
    env_default,
    fail,
    failing,
    join_spoken,
    make_parser,
    make_server,
    serve,
    spoken_result,
    startup,
    tool_meta,
)
from engine.servers.rules.corpus import CorpusError, RulesCorpus

DEFAULT_RULES_DIR = ASSETS_DIR / "rules"
_SEARCH_META = tool_meta(
    estimated_ms=5,
    max_ms=500,
    idempotent=True,
    cacheable_seconds=3600,
    probe_args={"query": "initiative", "system": "d20"},
)
_GET_META = tool_meta(
    estimated_ms=2, max_ms=200, idempotent=True, cacheable_seconds=3600, probe_args={"id": "d20-initiative"}
)


def build_server(args: argparse.Namespace, corpus: RulesCorpus) -> MCPServer[Any]:
    systems = join_spoken(sorted(corpus.systems))
    server = make_server("rules", f"Searches tabletop rules for these systems: {systems}.", args)

    @server.tool(
        description=f"Search the rules by words, best match first. system: one of {systems}, or empty = all.",
        meta=_SEARCH_META,
        annotations=READ_ONLY,
    )
    def search_rules(query: str, system: str = "") -> CallToolResult:
        chosen = system.strip().lower() or None
        if chosen is not None and chosen not in corpus.systems:
            fail(f"there is no rules system called {system!r}; the systems are: {systems}")
        with failing(CorpusError):
            found = corpus.search(query, chosen)
        if not found:
            speech = f"I found no rule about {query.strip()!r}."
        else:
            best = found[0][0]
            others = [rule.title for rule, _ in found[1:3]]
            speech = f"{best.title}: {best.text}"
            if others:
                speech += f" Related rules: {join_spoken(others)}."
        return spoken_result(
            speech,
            {
                "query": query,
                "system": chosen,
                "results": [
                    {
                        "id": rule.id,
                        "system": rule.system,
                        "title": rule.title,
                        "score": round(score, 3),
                        "snippet": rule.text[:160],
                    }
                    for rule, score in found
                ],
            },
        )

    @server.tool(
        description="Get the full text of one rule by its id (from search_rules).",
        meta=_GET_META,
        annotations=READ_ONLY,
    )
    def get_rule(id: str) -> CallToolResult:
        rule = corpus.rules.get(id.strip())
        if rule is None:
            close = corpus.suggestions(id.strip())
            hint = f"; did you mean {' or '.join(close)}?" if close else "; use search_rules to find ids"
            fail(f"there is no rule with id {id!r}{hint}")
        return spoken_result(f"{rule.title}: {rule.text}", rule.as_dict())

    return server


def create(argv: Sequence[str] | None = None) -> MCPServer[Any]:
    """The rules server for this command line (``StartupError`` on a bad one)."""
    parser = make_parser("python -m engine.servers.rules", "Tabletop rules search MCP server.")
    parser.add_argument(
        "--rules-dir", default=None, help=f"folder of rules YAML files (env AVA_RULES_DIR; default {DEFAULT_RULES_DIR})"
    )
    args = parser.parse_args(list(argv or []))
    folder = Path(env_default(args.rules_dir, "AVA_RULES_DIR", str(DEFAULT_RULES_DIR)) or DEFAULT_RULES_DIR)
    with startup("rules", CorpusError):
        corpus = RulesCorpus(folder)
    return build_server(args, corpus)


def main(argv: list[str] | None = None) -> None:
    serve(create, argv)
