"""Random tables for the dice server, loaded from YAML.

Why it exists: game masters keep random tables (weather, tavern names, encounters) as data, not code.
The file format is::

    tables:
      weather:
        description: Weather for the day's travel   # optional
        entries:                                     # plain strings, or {text, weight}
          - Clear skies
          - {text: Heavy rain, weight: 2}

A table is rolled with one die of (sum of weights) sides; a malformed file is refused at startup with a
message naming the table and entry.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.bounds.yaml_loader import YAMLError
from engine.bounds.yaml_loader import load_file as load_yaml_file


class TableError(ValueError):
    """The tables file is missing or malformed; the message names the place."""


@dataclass(frozen=True)
class Entry:
    text: str
    weight: int


@dataclass(frozen=True)
class Table:
    name: str
    description: str
    entries: tuple[Entry, ...]

    @property
    def sides(self) -> int:
        return sum(entry.weight for entry in self.entries)

    def roll(self, rng: random.Random) -> tuple[int, Entry]:
        value = rng.randint(1, self.sides)
        running = 0
        for entry in self.entries:
            running += entry.weight
            if value <= running:
                return value, entry
        raise AssertionError("unreachable: value is within the sum of weights")


def _entry(table: str, index: int, raw: Any) -> Entry:
    where = f"table {table!r}, entry {index + 1}"
    if isinstance(raw, str) and raw.strip():
        return Entry(raw.strip(), 1)
    if isinstance(raw, dict):
        text = raw.get("text")
        weight = raw.get("weight", 1)
        unknown = set(raw) - {"text", "weight"}
        if unknown:
            raise TableError(f"{where}: unknown keys {sorted(unknown)} (allowed: text, weight)")
        if not isinstance(text, str) or not text.strip():
            raise TableError(f"{where}: 'text' must be a non-empty string")
        if not isinstance(weight, int) or isinstance(weight, bool) or weight < 1:
            raise TableError(f"{where}: 'weight' must be a whole number of at least 1, got {weight!r}")
        return Entry(text.strip(), weight)
    raise TableError(f"{where}: expected a string or a mapping with 'text' and 'weight', got {raw!r}")


def load_tables(path: Path) -> dict[str, Table]:
    """Read and validate the tables file at ``path``."""
    try:
        data = load_yaml_file(path)
    except OSError as exc:
        raise TableError(f"cannot read dice tables file {path}: {exc.strerror or exc}") from exc
    except YAMLError as exc:
        raise TableError(f"dice tables file {path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict) or not isinstance(data.get("tables"), dict):
        raise TableError(f"dice tables file {path} must have a top-level 'tables' mapping")
    tables: dict[str, Table] = {}
    for name, body in data["tables"].items():
        key = str(name).strip().lower()
        if not isinstance(body, dict):
            raise TableError(f"{path}: table {name!r} must be a mapping with 'entries'")
        entries = body.get("entries")
        if not isinstance(entries, list) or not entries:
            raise TableError(f"{path}: table {name!r} needs a non-empty 'entries' list")
        description = body.get("description", "")
        if not isinstance(description, str):
            raise TableError(f"{path}: table {name!r}: 'description' must be a string")
        tables[key] = Table(key, description, tuple(_entry(key, i, raw) for i, raw in enumerate(entries)))
    return tables
