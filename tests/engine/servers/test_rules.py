"""Rules server: the corpus (size, validation, ranking) and the server as a child process over stdio."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from mcp import Client
from mcp.types import CallToolResult

from engine.servers.rules.corpus import CorpusError, RulesCorpus

RULES = Path(__file__).resolve().parents[3] / "assets" / "rules"


def test_corpus_ranking_and_validation(tmp_path: Path) -> None:
    corpus = RulesCorpus(RULES)
    assert set(corpus.systems) == {"d20", "d6"} and len(corpus.rules) >= 25
    assert corpus.search("how does grappling work", "d20")[0][0].id == "d20-grapple"
    assert corpus.search("cover behind a wall", "d6")[0][0].id == "d6-cover"
    assert corpus.search("death saving throw")[0][0].id == "d20-death-saves"
    assert {rule.system for rule, _ in corpus.search("grapple")} == {"d20", "d6"}
    scores = [score for _, score in corpus.search("initiative turn order")]
    assert scores == sorted(scores, reverse=True)
    assert corpus.suggestions("d20-grapl") == ["d20-grapple"]
    with pytest.raises(CorpusError, match="no words"):
        corpus.search("??")
    (tmp_path / "x.yaml").write_text("system: x\nrules:\n  - {id: a, title: '', text: b}\n")
    with pytest.raises(CorpusError, match="rule 1: 'title' must be a non-empty string"):
        RulesCorpus(tmp_path)
    with pytest.raises(CorpusError, match="no rules files"):
        RulesCorpus(tmp_path / "empty")


async def test_rules_server_over_stdio(spawn: Callable[..., Client], text: Callable[[CallToolResult], str]) -> None:
    async with spawn("rules") as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == {"search_rules", "get_rule"}
        assert (tools["get_rule"].meta or {})["probe_args"] == {"id": "d20-initiative"}

        found = await client.call_tool("search_rules", {"query": "grappling", "system": "d20"})
        assert not found.is_error and text(found).startswith("Grappling: Instead of one attack")
        results = (found.structured_content or {})["results"]
        assert results[0]["id"] == "d20-grapple" and all(r["system"] == "d20" for r in results)
        anywhere = await client.call_tool("search_rules", {"query": "advantage"})
        assert (anywhere.structured_content or {})["results"][0]["id"] == "d20-advantage"
        nothing = await client.call_tool("search_rules", {"query": "spaceship", "system": "d6"})
        assert not nothing.is_error and text(nothing) == "I found no rule about 'spaceship'."

        rule = await client.call_tool("get_rule", {"id": "d6-push"})
        assert text(rule).startswith("Pushing a roll: After a failed roll")

        bad = await client.call_tool("search_rules", {"query": "cover", "system": "gurps"})
        assert bad.is_error and "no rules system called 'gurps'; the systems are: d20 and d6" in text(bad)
        bad = await client.call_tool("search_rules", {"query": "!!"})
        assert bad.is_error and "has no words to search for" in text(bad)
        bad = await client.call_tool("get_rule", {"id": "d6-pus"})
        assert bad.is_error and "no rule with id 'd6-pus'; did you mean d6-push?" in text(bad)
