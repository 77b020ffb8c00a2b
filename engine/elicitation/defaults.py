"""SEP-1034 defaults: the ``default`` a requested form gives a field goes back for every field an answer leaves out.

Why it exists: a server may give each field of its form a ``default`` (SEP-1034: strings, numbers and integers,
booleans, single- and multi-select enums) and expects it back when the user accepts without changing that field.
Whoever answers — the caller by voice (only required fields are asked), the operator's console form, or
``ava-engine mcp call --accept-defaults`` (the defaults alone, ``defaults_only``) — an accepted answer passes through
``accepted``: each field it leaves out (absent, null or empty) takes its default, and what the answer gives wins.
A default is checked against its own field like any answer (type, choices, bounds, format); one that does not fit
is left out with a warning naming the server, tool and field, and never sent.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from engine.elicitation.links import Declined
from engine.elicitation.schema import FormField, SchemaError, check_content, check_value

log = logging.getLogger(__name__)


def usable_default(f: FormField, who: str) -> Any | None:
    """``f``'s default as the field takes it, or None when it has none or it does not fit (logged; ``who``: the
    server and tool that asked)."""
    if f.default is None:
        return None
    try:
        return check_value(f, f.default)
    except SchemaError as e:
        shown = repr(f.default)
        shown = shown if len(shown) <= 60 else f"{shown[:60]}…"
        log.warning("%s: the default %s of field %r is left out of the answer: %s", who, shown, f.name, e)
        return None


def with_defaults(fields: Sequence[FormField], content: Mapping[str, Any], who: str) -> dict[str, Any]:
    """``content`` with each field it leaves out (absent, null or "") set to that field's usable default."""
    out = dict(content)
    for f in fields:
        if content.get(f.name) in (None, ""):
            value = usable_default(f, who)
            if value is not None:
                out[f.name] = value
    return out


def accepted(fields: Sequence[FormField], content: Mapping[str, Any], who: str) -> dict[str, Any]:
    """An accepted answer as the server gets it: the defaults filled in, then checked against the form
    (``SchemaError`` naming the field that does not fit, or a required one still missing)."""
    return check_content(list(fields), with_defaults(fields, content, who))


def defaults_only(fields: Sequence[FormField], who: str) -> dict[str, Any]:
    """The form answered by its defaults alone; ``SchemaError`` naming every required field that has no usable
    default (nothing can be sent for it)."""
    content = with_defaults(fields, {}, who)
    missing = [f.name for f in fields if f.required and f.name not in content]
    if missing:
        names = ", ".join(repr(n) for n in missing)
        raise SchemaError(f"{who}: required field(s) without a usable default: {names}")
    return check_content(list(fields), content)


def answer_by_defaults(who: str, url: str | None, fields: Sequence[FormField]) -> dict[str, Any]:
    """``accept_defaults``: the content that answers a question by its form's defaults; ``Declined`` for a link (no
    default opens it) and for a required field without a usable default."""
    if url is not None:
        raise Declined("policy", f"{who} asked to open a link: the form's defaults answer forms only")
    try:
        return defaults_only(fields, who)
    except SchemaError as e:
        raise Declined("policy", f"the form's defaults cannot answer it: {e}") from None
