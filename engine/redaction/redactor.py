"""Keeps secret values out of anything the engine says: tool results, events, logs, CLI output and status.

One ``Redactor`` per engine (and one per CLI process) knows the secrets: every ``SecretStr`` in the settings and
every value the loader substituted from ``${keyring:NAME}`` (anywhere) or from ``${VAR}`` into a credential place
(see ``engine.config.loader``). It masks them, and the forms they take once embedded in JSON text (escaped once or
twice), in Python reprs, in URLs (percent-encoded), in any string, and recursively in dicts, lists and dataclasses.

Values shorter than ``MIN_SECRET_LENGTH`` characters are never treated as secrets: masking ``"on"`` or ``"80"``
everywhere would garble every output while protecting nothing a guess would not find.

Matching is one compiled regular expression (an alternation of every form, longest first), so a string that holds
no secret costs a single scan, and a redactor with no secrets costs one attribute check: it sits on the event bus.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import re
import threading
from collections.abc import Iterable
from typing import Any, TextIO, TypeVar, cast
from urllib.parse import quote, quote_plus

from pydantic import BaseModel, SecretStr

_T = TypeVar("_T")

MASK = "••••••"
#: Shorter values are not masked (see the module docstring).
MIN_SECRET_LENGTH = 4
#: Key names whose values an operator's view hides, known secrets or not (a password a model passes as an argument).
SECRET_KEY_RE = re.compile(r"(pass(word)?|secret|token|api[_-]?key|auth|credential|private)", re.I)


def secret_values(model: Any) -> set[str]:
    """Every SecretStr value inside a settings model (recursively), plus the secrets its loader substituted."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, SecretStr):
            found.add(node.get_secret_value())
        elif isinstance(node, BaseModel):
            parts = getattr(node, "secret_parts", None)  # secrets inside a plain-text field (a URL's password)
            if callable(parts):
                found.update(parts())
            for name in type(node).model_fields:
                walk(getattr(node, name))
        elif isinstance(node, dict):
            for v in node.values():
                walk(v)
        elif isinstance(node, list | tuple):
            for v in node:
                walk(v)

    walk(model)
    if isinstance(model, BaseModel):
        found.update(getattr(model, "_expanded_secrets", None) or ())
    return {v for v in found if len(v) >= MIN_SECRET_LENGTH}


def encoded_forms(secret: str) -> set[str]:
    """``secret`` as it appears in plain text, in JSON strings (once or twice escaped), in reprs and in URLs."""
    forms = {secret}
    for ascii_only in (False, True):
        once = json.dumps(secret, ensure_ascii=ascii_only)[1:-1]
        forms.add(once)
        forms.add(json.dumps(once, ensure_ascii=ascii_only)[1:-1])
    forms.add(repr(secret)[1:-1])  # a dict or list logged with %r
    forms.add(ascii(secret)[1:-1])
    forms.add(quote(secret, safe=""))
    forms.add(quote_plus(secret, safe=""))
    return {f for f in forms if len(f) >= MIN_SECRET_LENGTH}


#: Characters that JSON, repr and URL encoding all leave as they are.
_UNCHANGED = re.compile(r"[A-Za-z0-9_.~-]+")

_SCALARS = (bool, int, float)
_dump = json.JSONEncoder(default=repr, ensure_ascii=False).encode

#: Per dataclass type: the names of its fields (``dataclasses.fields`` is too slow for the event bus).
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


class Redactor:
    """Masks known secrets; ``update`` adds secrets (old ones stay masked: they may still be in a history)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._secrets: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None
        #: Each secret's longest run of characters no encoding changes: absent from a JSON dump of a structure,
        #: no form of that secret can be inside it (one C-speed dump and scan instead of a walk in Python).
        self._cores: re.Pattern[str] | None = None
        #: Whether there is anything to mask (an attribute, not a property: the tool path reads it on every call).
        self.active = False
        self.update(secrets)

    def update(self, secrets: Iterable[str]) -> None:
        new = {s for s in secrets if isinstance(s, str) and len(s) >= MIN_SECRET_LENGTH}
        with self._lock:
            if new <= self._secrets:
                return
            self._secrets = self._secrets | new
            forms: set[str] = set()
            for s in self._secrets:
                forms |= encoded_forms(s)
            ordered = sorted(forms, key=lambda f: (-len(f), f))
            self._pattern = re.compile("|".join(re.escape(f) for f in ordered))
            self.active = True
            cores = [max(_UNCHANGED.findall(s), key=len, default="") for s in self._secrets]
            self._cores = None if not all(cores) else re.compile("|".join(re.escape(c) for c in set(cores)))

    def __call__(self, text: str) -> str:
        pattern = self._pattern
        if pattern is None or not text or pattern.search(text) is None:
            return text
        return pattern.sub(MASK, text)

    def value(self, node: _T) -> _T:
        """``node`` with every string inside it masked (dict keys too); the same object when nothing changed."""
        if self._pattern is None or node is None or self._surely_clean(node):
            return node
        return cast(_T, self._walk(node, 0))

    def for_display(self, node: Any) -> Any:
        """``node`` as an operator's view shows it: ``value`` (known secrets masked in every form), and every
        non-empty value under a secret-sounding key (``SECRET_KEY_RE``) masked too, known or not."""
        return self.value(_mask_keys(node, 0))

    def _surely_clean(self, node: Any) -> bool:
        cores = self._cores
        if cores is None:
            return False
        if isinstance(node, str):
            return cores.search(node) is None
        try:
            dumped = _dump(node)
        except (TypeError, ValueError, RecursionError):  # odd keys, a cycle: walk it
            return False
        return cores.search(dumped) is None

    def _walk(self, node: Any, depth: int) -> Any:
        if isinstance(node, str):
            return self(node)
        if depth > 200:  # deeper than any real result: give up on the structure, keep no text of it
            return MASK
        if isinstance(node, dict):
            out = {self._walk(k, depth + 1): self._walk(v, depth + 1) for k, v in node.items()}
            same = len(out) == len(node) and all(k in node and node[k] is v for k, v in out.items())
            return node if same else out
        if isinstance(node, list | tuple | set | frozenset):
            items = [self._walk(v, depth + 1) for v in node]
            if all(a is b for a, b in zip(items, node, strict=True)):
                return node
            return items if isinstance(node, list) else type(node)(items)
        if isinstance(node, bytes | bytearray):
            text = bytes(node).decode("utf-8", "replace")
            clean = self(text)
            return node if clean == text else clean.encode()
        if dataclasses.is_dataclass(node) and not isinstance(node, type):
            return self._dataclass(node, depth)
        return node

    def _dataclass(self, obj: Any, depth: int) -> Any:
        cls = type(obj)
        names = _FIELD_NAMES.get(cls)
        if names is None:
            names = _FIELD_NAMES[cls] = tuple(f.name for f in dataclasses.fields(obj) if f.init)
        changes: dict[str, Any] = {}
        for name in names:
            v = getattr(obj, name)
            if v is None or isinstance(v, bool | int | float):
                continue
            clean = self._walk(v, depth + 1)
            if clean is not v:
                changes[name] = clean
        return dataclasses.replace(obj, **changes) if changes else obj

    def event(self, event: _T) -> _T:
        """A dataclass (an event) with every field masked; the same object when it holds no secret."""
        if self._pattern is None:
            return event
        cores = self._cores
        names = _FIELD_NAMES.get(type(event))
        if cores is None or names is None:
            return cast(_T, self._dataclass(event, 0))
        for name in names:  # the common case: short strings and numbers, no core of any secret in them
            v = getattr(event, name)
            if v is None or v.__class__ in _SCALARS:
                continue
            if not (cores.search(v) is None if v.__class__ is str else self._surely_clean(v)):
                return cast(_T, self._dataclass(event, 0))
        return event


def _mask_keys(node: Any, depth: int) -> Any:
    if depth > 200:  # as in Redactor._walk: deeper than any real value, keep no text of it
        return MASK
    if isinstance(node, dict):
        return {
            k: MASK
            if isinstance(k, str) and SECRET_KEY_RE.search(k) and v not in (None, "")
            else _mask_keys(v, depth + 1)
            for k, v in node.items()
        }
    if isinstance(node, list | tuple):
        return [_mask_keys(v, depth + 1) for v in node]
    return node


class RedactingFilter(logging.Filter):
    """Masks known secrets in every record: the message with its args, exception text and stack."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.redactor.active:
            return True
        try:
            msg = record.getMessage()
        except Exception:  # a bad format string: keep the parts, masked
            msg = f"{record.msg} {record.args}"
        record.msg, record.args = self.redactor(msg), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redactor(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redactor(record.stack_info)
        return True


class RedactingWriter:
    """A text stream wrapper that masks known secrets in everything written through it (CLI stdout/stderr).

    Text is held until a line ends (or ``flush``), so a secret written in pieces is still seen whole.
    """

    def __init__(self, inner: TextIO, redactor: Redactor) -> None:
        self.inner = inner
        self.redactor = redactor
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in text:
            head, sep, self._pending = self._pending.rpartition("\n")
            self.inner.write(self.redactor(head + sep))
        return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if self._pending:
            self.inner.write(self.redactor(self._pending))
            self._pending = ""
        self.inner.flush()

    def __getattr__(self, name: str) -> Any:  # encoding, isatty, fileno … of the real stream
        return getattr(self.inner, name)
