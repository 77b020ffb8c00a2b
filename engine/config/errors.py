"""Config errors that say exactly where the problem is.

Every problem found while reading, expanding or validating a config file becomes one ``ConfigIssue`` (file,
line, key path, message); the loader collects all of them and raises a single ``ConfigError`` so the operator
fixes the whole file in one pass instead of one typo per run. Rendered form:
``config/x.yaml:14: mcp.servers.dice.restart.backoff_ms: must be > 0``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

KeyPath = tuple[str | int, ...]


def format_path(path: Sequence[str | int]) -> str:
    """Render a key path as ``mcp.servers.dice.tools[0].name``."""
    out = ""
    for part in path:
        if isinstance(part, int) and not isinstance(part, bool):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


@dataclass(frozen=True)
class ConfigIssue:
    """One problem: where it is (file, 1-based line or None, dotted key path) and what is wrong."""

    file: str
    line: int | None
    path: str
    message: str

    def render(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"

    def __str__(self) -> str:
        return self.render()


class ConfigError(ValueError):
    """One or more config problems; ``str()`` renders every issue, one per line."""

    def __init__(self, issues: Iterable[ConfigIssue]) -> None:
        self.issues: list[ConfigIssue] = list(issues)
        if not self.issues:
            raise ValueError("ConfigError needs at least one issue")
        super().__init__(self.render())

    @classmethod
    def single(cls, file: str, message: str, *, line: int | None = None, path: str = "") -> ConfigError:
        return cls([ConfigIssue(file=file, line=line, path=path, message=message)])

    def render(self) -> str:
        return "\n".join(issue.render() for issue in self.issues)

    def __str__(self) -> str:
        return self.render()


class ConfigConflictError(ConfigError):
    """The file changed on disk after it was loaded for editing; saving would overwrite another edit."""
