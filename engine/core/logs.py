"""Applies ``engine.logging`` to the process: handlers, levels, format, and the secret filter on every handler.

The one place logging is set up, for the CLI (``ava-engine``) and the console, so both honour the same keys and
neither can forget the ``RedactingFilter``: every record any handler writes (message, args, exception text) has
known secrets masked. Calling it again (after a config reload) replaces the handlers it installed before and
leaves everyone else's (pytest's, an embedding application's) alone.

Levels: the CLI's ``--log-level`` overrides everything. Otherwise the file gets ``engine.logging.level``; stderr
gets it too when the config sets it explicitly, else ``default_level`` (the CLI keeps stderr to warnings so that
command output stays readable). The console passes no stream: a TUI owns the terminal.
"""

from __future__ import annotations

import json
import logging
import logging.handlers
import os
import sys
import time
from pathlib import Path
from typing import TextIO

from engine.config.models import LoggingConfig
from engine.redaction.redactor import RedactingFilter, Redactor

TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
#: Marks the handlers this module installed (so a second call replaces exactly those).
_MARK = "_ava_engine_handler"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts (ISO 8601 UTC), level, logger, message, and exc when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, object] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            out["exc"] = record.exc_text
        if record.stack_info:
            out["stack"] = record.stack_info
        return json.dumps(out, ensure_ascii=False)


def _level(name: str) -> int:
    return logging.getLevelNamesMapping()[name.upper()]


class LevelThreshold(logging.Filter):
    """A handler's level with per-logger exceptions (``engine.logging.loggers``; the longest prefix wins)."""

    def __init__(self, level: int, overrides: dict[str, int]) -> None:
        super().__init__()
        self.level = level
        self.overrides = sorted(overrides.items(), key=lambda kv: -len(kv[0]))

    def threshold(self, name: str) -> int:
        for prefix, level in self.overrides:
            if name == prefix or name.startswith(prefix + "."):
                return level
        return self.level

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= self.threshold(record.name)


def log_file_path(cfg: LoggingConfig, base_dir: Path | None = None) -> Path | None:
    """``engine.logging.file`` with ``~`` expanded, relative to the config file's folder."""
    if not cfg.file:
        return None
    path = Path(os.path.expanduser(cfg.file))
    return path if path.is_absolute() or base_dir is None else base_dir / path


#: Loggers whose level an earlier call set (reset when the config no longer names them).
_leveled: set[str] = set()


def configure_logging(
    cfg: LoggingConfig | None,
    redactor: Redactor,
    *,
    cli_level: str | None = None,
    stream: TextIO | None = sys.stderr,
    default_level: str = "warning",
    base_dir: Path | None = None,
) -> list[logging.Handler]:
    """Install the handlers ``cfg`` asks for on the root logger (replacing ours from an earlier call)."""
    cfg = cfg or LoggingConfig()
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, _MARK, False)]:
        root.removeHandler(old)
        old.close()
    overrides = {} if cli_level else {name: _level(lv) for name, lv in cfg.loggers.items()}
    formatter: logging.Formatter = JsonFormatter() if cfg.json_format else logging.Formatter(TEXT_FORMAT)
    redacting = RedactingFilter(redactor)
    handlers: list[tuple[logging.Handler, int]] = []
    if stream is not None:
        explicit = "level" in cfg.model_fields_set
        level = _level(cli_level or (cfg.level if explicit else default_level))
        handlers.append((logging.StreamHandler(stream), level))
    path = log_file_path(cfg, base_dir)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        rotating = logging.handlers.RotatingFileHandler(
            path, maxBytes=cfg.max_bytes, backupCount=cfg.backup_count, encoding="utf-8"
        )
        handlers.append((rotating, _level(cli_level or cfg.level)))
    for h, level in handlers:
        h.setFormatter(formatter)
        h.addFilter(LevelThreshold(level, overrides))
        h.addFilter(redacting)
        setattr(h, _MARK, True)
        root.addHandler(h)
    # Records must be created for the most verbose handler; each handler's threshold then picks its own.
    levels = [level for _, level in handlers]
    if levels:  # no handler of ours (the console without a file): leave the root logger as it is
        root.setLevel(min(levels))
    for name in _leveled - set(overrides):
        logging.getLogger(name).setLevel(logging.NOTSET)
    _leveled.clear()
    for name, level in overrides.items():
        logging.getLogger(name).setLevel(level)
        _leveled.add(name)
    return [h for h, _ in handlers]
