"""Keeps secret values out of anything the engine says: error messages, events, logs and CLI output."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, SecretStr

MASK = "••••••"


def secret_values(model: Any) -> set[str]:
    """Every SecretStr value inside a settings model (recursively)."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, SecretStr):
            v = node.get_secret_value()
            if len(v) >= 4:
                found.add(v)
        elif isinstance(node, BaseModel):
            for name in type(node).model_fields:
                walk(getattr(node, name))
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list | tuple):
            for v in node:
                walk(v)

    walk(model)
    return found


class Redactor:
    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = sorted(set(secrets), key=len, reverse=True)

    def update(self, secrets: Iterable[str]) -> None:
        self._secrets = sorted(set(self._secrets) | set(secrets), key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for s in self._secrets:
            if s in text:
                text = text.replace(s, MASK)
        return text


class RedactingFilter(logging.Filter):
    """A logging filter that masks known secrets in every record's final message."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        msg = record.getMessage()
        clean = self.redactor(msg)
        if clean != msg:
            record.msg, record.args = clean, None
        return True
