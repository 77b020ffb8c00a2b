"""The project's JSON Schema rules, shared by both validation paths: Draft 2020-12 (``Reference``) with ECMA-262
``pattern`` semantics and one format checker (the library's checks, plus the project's own ``url`` and ``phone``), and
the keyword subset the fast path compiles.

Why a module of its own: the rules are what the fast compiler (``engine.tools.fast_schema``) and the reference
must agree on; keeping them in one place is what makes "one set of rules" true.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from email_validator import EmailNotValidError, validate_email
from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators

from engine.tools.limits import clip

_ANNOTATIONS = frozenset({"description", "default", "title", "examples", "$schema", "$comment"})
_TYPES = frozenset({"string", "integer", "number", "boolean", "array", "object", "null"})
_FAST_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "const",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "minLength",
        "maxLength",
        "items",
        "minItems",
        "maxItems",
        "uniqueItems",
    }
    | _ANNOTATIONS
)

_PHONE = re.compile(r"\+?[0-9][0-9 ().\-]{4,22}[0-9]")


def _is_url(v: str) -> bool:
    if any(c.isspace() for c in v):
        return False
    parts = urlsplit(v)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def _is_mailbox(v: str) -> bool:
    """An RFC 5321 mailbox, as ``email-validator`` reads one (syntax only: no DNS): quoted local parts, address
    literals and international addresses are mailboxes; control characters, spaces outside quotes, bidi overrides
    and the special-use names (``localhost``, ``.test``, ``.invalid``: never deliverable) are not."""
    try:
        validate_email(
            v,
            check_deliverability=False,
            allow_quoted_local=True,
            allow_domain_literal=True,
            globally_deliverable=False,
        )
    except EmailNotValidError:
        return False
    return True


#: Formats checked by the project rather than by ``jsonschema``'s checker: ``url`` (a web address, http or
#: https) and ``phone``, which JSON Schema does not define, and ``email``, the RFC 5321 mailbox JSON Schema names,
#: for which the library only looks for an "@" (it would pass ``a@b.ch\nBcc: x@y.z`` on to a mail header).
#: Every other format JSON Schema defines (``uri``: any absolute RFC 3986 URI — ``data:``, ``urn:``, ``mailto:``,
#: ``file:`` —, ``date-time``, ``hostname``, ``ipv4``, …) is checked exactly as ``jsonschema`` checks it.
FORMATS: dict[str, Callable[[str], bool]] = {
    "url": _is_url,
    "phone": lambda v: _PHONE.fullmatch(v) is not None,
    "email": _is_mailbox,
}


def _format_checker() -> FormatChecker:
    checker = FormatChecker()
    for name, fn in FORMATS.items():
        checker.checks(name)(lambda v, fn=fn: not isinstance(v, str) or fn(v))
    return checker


#: The one format checker both paths use.
FORMAT_CHECKER = _format_checker()


@lru_cache(maxsize=1024)
def js_pattern(p: str) -> re.Pattern[str]:
    """A JSON Schema ``pattern`` compiled with ECMA-262's ``$`` (end of input only, not before a final newline)."""
    return re.compile(re.sub(r"(?<!\\)\$", r"\\Z", p))


def _ecma_pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "string"):
        return
    try:
        rx = js_pattern(patrn)
    except re.error:
        yield ValidationError(f"the schema's pattern {clip(patrn)!r} is not a valid regular expression")
        return
    if not rx.search(instance):
        yield ValidationError(f"does not match pattern {clip(patrn)}")


#: The reference: Draft 2020-12 with the project's pattern semantics.
Reference = validators.extend(Draft202012Validator, {"pattern": _ecma_pattern})
