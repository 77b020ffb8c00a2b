"""What an MCP JSON import found and did: ``ImportPlan`` (the file), ``ImportResult`` (the merge), ``Ask`` (an input).

Why it exists: ``engine.config.mcp_import`` is the importer; these are the shapes its callers (the CLI's
``import-mcp-json``, the console's Servers screen) read and answer, kept apart so each module stays small.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.config.mcp_vscode import InputPrompt

__all__ = ["Ask", "ImportPlan", "ImportResult"]


@dataclass
class ImportPlan:
    """What a file holds: server configs by id, the names that became other ids, entries skipped and why."""

    servers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: original name -> the id it got (only when they differ)
    renamed: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    inputs: dict[str, InputPrompt] = field(default_factory=dict)
    #: server id -> {keyring name: input id} for the ``${input:ID}`` its entry uses
    used_inputs: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Ask:
    """One ``${input:ID}`` value to ask the user for: stored under ``names`` (one per server using it)."""

    prompt: InputPrompt
    names: tuple[str, ...]
    servers: tuple[str, ...]


@dataclass
class ImportResult:
    """What an import did to a config document (nothing is written: the caller saves)."""

    source: str
    added: dict[str, dict[str, Any]]
    unchanged: list[str]
    conflicts: list[str]
    renamed: dict[str, str]
    problems: list[str]
    #: keyring name -> value, stored by ``store_secrets`` when the caller writes the file (never printed)
    secrets: dict[str, str] = field(default_factory=dict, repr=False)
    #: why the keyring cannot take ``secrets`` (no backend): the caller must not write the file
    keyring_problem: str | None = None
    #: ``${input:ID}`` values nobody has given yet (their keyring names are not set): ask, or say what to set
    asks: list[Ask] = field(default_factory=list)

    def answer(self, ask: Ask, value: str) -> None:
        """The user's value for ``ask``: it goes to the keyring with the moved credentials."""
        if not value:
            raise ValueError(f"no value given for the input {ask.prompt.label()}")
        for name in ask.names:
            self.secrets[name] = value
        self.asks = [a for a in self.asks if a is not ask]

    def how_to_set(self) -> list[str]:
        """One line per unanswered input: the command that stores it, and what it is."""
        return [
            f"ava-engine secrets set {name}   # input {a.prompt.label()} of mcp.servers.{sid}"
            for a in self.asks
            for name, sid in zip(a.names, a.servers, strict=True)
        ]

    def summary(self) -> list[str]:
        """One line per fact, the same wherever the import ran (CLI output, console notification)."""
        lines = [f"added mcp.servers.{sid} ({cfg['transport']})" for sid, cfg in sorted(self.added.items())]
        lines += [f"  {name!r} became the id {sid!r}" for name, sid in self.renamed.items()]
        lines += [f"  secret {name} goes to the OS keyring" for name in sorted(self.secrets)]
        lines += [f"unchanged mcp.servers.{sid}" for sid in self.unchanged]
        if not self.added:
            lines.append(f"nothing added from {self.source}")
        return lines

    def warnings(self) -> list[str]:
        """Conflicts (never overwritten) and entries that were skipped or partly imported."""
        return [*self.conflicts, *self.problems]
