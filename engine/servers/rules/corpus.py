"""Loading the rules corpus (YAML files) and searching it with SQLite FTS5 in memory.

Why it exists: a game master asks "how does grappling work?" mid-session; the answer must be the best
matching rule of the chosen system, found by ranked full-text search (BM25, title and tags weighted above
body text) over a corpus validated at startup.

File format (one file per system)::

    system: d20
    name: Generic d20 rules
    rules:
      - {id: d20-cover, title: Cover, tags: [combat, cover], text: "..."}
"""

from __future__ import annotations

import difflib
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.bounds.yaml_loader import YAMLError
from engine.bounds.yaml_loader import load_file as load_yaml_file

_STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i if in is it of on or the to what when where "
    "which who why with work works you your".split()
)


class CorpusError(ValueError):
    """The corpus is unreadable or malformed; the message names the file and rule."""


@dataclass(frozen=True)
class Rule:
    id: str
    system: str
    title: str
    tags: tuple[str, ...]
    text: str

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "system": self.system, "title": self.title, "tags": list(self.tags), "text": self.text}


def _load_file(path: Path) -> tuple[str, str, list[Rule]]:
    try:
        data = load_yaml_file(path)
    except (OSError, YAMLError) as exc:
        raise CorpusError(f"cannot read rules file {path}: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("system"), str) or not isinstance(data.get("rules"), list):
        raise CorpusError(f"{path}: expected keys 'system' (text) and 'rules' (a list)")
    system = data["system"].strip().lower()
    rules: list[Rule] = []
    for index, raw in enumerate(data["rules"]):
        where = f"{path}: rule {index + 1}"
        if not isinstance(raw, dict):
            raise CorpusError(f"{where}: expected a mapping")
        for key in ("id", "title", "text"):
            if not isinstance(raw.get(key), str) or not raw[key].strip():
                raise CorpusError(f"{where}: '{key}' must be a non-empty string")
        tags = raw.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
            raise CorpusError(f"{where}: 'tags' must be a list of strings")
        rules.append(Rule(raw["id"].strip(), system, raw["title"].strip(), tuple(tags), " ".join(raw["text"].split())))
    return system, str(data.get("name") or system), rules


class RulesCorpus:
    """All rule files in a folder, indexed for search."""

    def __init__(self, folder: Path) -> None:
        files = sorted(folder.glob("*.yaml")) + sorted(folder.glob("*.yml"))
        if not files:
            raise CorpusError(f"no rules files (*.yaml) in {folder}")
        self.systems: dict[str, str] = {}
        self.rules: dict[str, Rule] = {}
        for path in files:
            system, name, rules = _load_file(path)
            if system in self.systems:
                raise CorpusError(f"{path}: system {system!r} is defined twice")
            self.systems[system] = name
            for rule in rules:
                if rule.id in self.rules:
                    raise CorpusError(f"{path}: rule id {rule.id!r} is used twice")
                self.rules[rule.id] = rule
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.db.execute(
            "CREATE VIRTUAL TABLE idx USING fts5(id UNINDEXED, system UNINDEXED, title, tags, text,"
            " tokenize='porter unicode61')"
        )
        self.db.executemany(
            "INSERT INTO idx(id, system, title, tags, text) VALUES (?, ?, ?, ?, ?)",
            [(r.id, r.system, r.title, " ".join(r.tags), r.text) for r in self.rules.values()],
        )

    def search(self, query: str, system: str | None = None, limit: int = 5) -> list[tuple[Rule, float]]:
        all_words = re.findall(r"\w+", query.lower())
        words = [word for word in all_words if word not in _STOPWORDS] or all_words
        if not words:
            raise CorpusError(f"the query {query!r} has no words to search for")
        match = " OR ".join(f'"{word}"' for word in words)
        sql = "SELECT id, bm25(idx, 0.0, 0.0, 5.0, 3.0, 1.0) FROM idx WHERE idx MATCH ?"
        params: list[Any] = [match]
        if system:
            sql += " AND system = ?"
            params.append(system)
        sql += " ORDER BY bm25(idx, 0.0, 0.0, 5.0, 3.0, 1.0) LIMIT ?"
        params.append(limit)
        found = [(self.rules[row[0]], -float(row[1])) for row in self.db.execute(sql, params)]
        # Drop matches that only share a very common word with the query.
        best = found[0][1] if found else 0.0
        return [(rule, score) for rule, score in found if score >= best * 0.2 and score > 0.01]

    def suggestions(self, rule_id: str) -> list[str]:
        return difflib.get_close_matches(rule_id, list(self.rules), n=3, cutoff=0.8)
