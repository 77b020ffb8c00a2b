"""Formats mean what JSON Schema says: ``uri`` is any absolute RFC 3986 URI, every format the specification defines
agrees with ``jsonschema``'s own checker on a shared corpus, and ``email`` is an RFC 5321 mailbox (stricter than the
library's "has an @" only where a value is no mailbox at all)."""

from __future__ import annotations

import pytest
from jsonschema import FormatChecker

from engine.tools.base import ToolParameter
from engine.tools.schema_rules import FORMAT_CHECKER, FORMATS, Reference

CORPUS = [
    "data:text/plain;base64,aGk=",
    "urn:isbn:0451450523",
    "mailto:ops@example.org",
    "file:///etc/hosts",
    "https://example.org/a?b=c#d",
    "http://[::1]:8080/",
    "tel:+41-44-000-00-00",
    "ftp://ftp.example.org/x",
    "relative/path",
    "//example.org/no-scheme",
    "not a uri",
    "http://exa mple.org",
    "",
    "2026-11-29",
    "2026-11-29T06:00:00Z",
    "2026-11-29T25:00:00Z",
    "2026-02-30",
    "06:00:00Z",
    "127.0.0.1",
    "999.1.1.1",
    "::1",
    "example.org",
    "-bad-.example",
    "a" * 64 + ".example.org",
    "123e4567-e89b-12d3-a456-426614174000",
    "123e4567",
    "^a+$",
    "(",
    "ümlaut.example",
]


def test_uri_is_any_absolute_rfc3986_uri() -> None:
    for value in ("data:text/plain,hi", "urn:isbn:0451450523", "mailto:a@b.ch", "file:///etc/hosts", "tel:+41"):
        assert FORMAT_CHECKER.conforms(value, "uri"), value
    for value in ("relative/path", "//example.org/x", "not a uri", ""):
        assert not FORMAT_CHECKER.conforms(value, "uri"), value


@pytest.mark.parametrize("fmt", sorted(set(FormatChecker().checkers) - set(FORMATS)))
def test_every_format_json_schema_defines_agrees_with_jsonschema(fmt: str) -> None:
    library = FormatChecker()
    for value in CORPUS:
        assert FORMAT_CHECKER.conforms(value, fmt) == library.conforms(value, fmt), (fmt, value)


def test_the_checker_knows_the_formats_tools_use() -> None:
    # Without their libraries jsonschema skips these formats silently (anything passes): they are dependencies.
    assert {"uri", "uri-reference", "date-time", "hostname", "email", "ipv4", "uuid"} <= set(FORMAT_CHECKER.checkers)


def test_email_is_an_rfc5321_mailbox() -> None:
    for value in ('"john smith"@example.org', "a@[127.0.0.1]", "jürgen@exämple.de", "a@b", "user+tag@example.com"):
        assert FORMAT_CHECKER.conforms(value, "email"), value
    for value in ("a@b.ch\nBcc: x@y.z", "a\u202e@b.ch", "@b.ch", "a b@c.ch", "a..b@c.ch", "nobody", "a@localhost"):
        assert not FORMAT_CHECKER.conforms(value, "email"), value


def test_a_url_parameter_is_a_web_address() -> None:
    schema = {"type": "object", "properties": {"site": ToolParameter("site", "string", format="url").to_schema()}}
    check = Reference(schema, format_checker=FORMAT_CHECKER)
    assert check.is_valid({"site": "https://example.org/x"})
    for value in ("javascript:alert(1)", "data:text/html,x", "file:///etc/passwd", "https://"):
        assert not check.is_valid({"site": value}), value
