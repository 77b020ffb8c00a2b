"""Spans as OTLP protobuf bytes (an ``ExportTraceServiceRequest``), written field by field.

Why by hand: the SDK's path (a ``Span`` per span, then ``encode_spans`` building one generated message per span,
attribute and value) costs tens of µs a span, which is more than the tool path it traces (issue 36 item 5). The wire
format of the few messages a span needs is small and fixed (opentelemetry-proto's trace.proto, common.proto and
resource.proto); the tests decode what is written here with the generated classes, as a collector does.

A span is kept as two pieces, its ``ScopeSpans.spans`` tag and length, then its ``Span`` message: a batch is the join
of its spans' pieces inside the request's resource and scope (``Encoder.wrap``), with no pass over its spans. A
``Span``'s fields may come in any order, so the span builder writes its frequent spans (tool calls, turns) from
cached pieces: one ``struct`` pack for ids, times and a measured value, then the ``head`` of what repeats (name,
kind, the shared attributes, the status). ``SpanEncoder`` writes the others (calls, stages, transfers) from
``SpanData``.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

#: ``Span.SpanKind`` values.
INTERNAL, SERVER, CLIENT = 1, 2, 3
#: ``Status.StatusCode.STATUS_CODE_ERROR``.
_ERROR = 2
_CACHE_MAX = 4096
_double = struct.Struct("<d").pack


class Shared:
    """Attributes many spans carry alike (a tool's name, server and status; a turn's tier and budget), encoded once."""

    __slots__ = ("attributes", "encoded")

    def __init__(self, attributes: Mapping[str, Any]) -> None:
        self.attributes = attributes
        self.encoded = b"".join([key_value(0x4A, k, v) for k, v in attributes.items()])


class SpanData(NamedTuple):
    """One finished span, as the builder hands it to ``SpanEncoder`` (ids as bytes, times in ns)."""

    trace_id: bytes
    span_id: bytes
    parent_id: bytes  # b"" for a root span
    name: str
    kind: int
    start_ns: int
    end_ns: int
    shared: Shared | None
    attributes: Mapping[str, Any]  # the span's own, after the shared ones
    error: str | None  # the status message of a failed span; None: status unset


def varint(n: int) -> bytes:
    if n < _SMALL:
        return _VARINTS[n]
    return _slow_varint(n)


def _slow_varint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


_SMALL = 1 << 14  # every length of a span or an attribute, in practice: a list index instead of a loop
_VARINTS = [_slow_varint(n) for n in range(_SMALL)]
#: A ``ScopeSpans.spans`` entry's tag and length, for the lengths a span has in practice (``span_tag`` for any).
TAGS = [b"\x12" + _VARINTS[n] for n in range(4096)]


def span_tag(n: int) -> bytes:
    """The tag and length before a ``Span`` message of ``n`` bytes."""
    return TAGS[n] if n < 4096 else b"\x12" + varint(n)


def field(tag: int, payload: bytes) -> bytes:
    """A length-delimited field (``tag`` is the field number shifted with wire type 2, all below 128 here)."""
    return bytes((tag,)) + varint(len(payload)) + payload


def any_value(v: Any) -> bytes:
    """An ``AnyValue``: string, bool, int or double (what span attributes hold here); anything else as its text."""
    if isinstance(v, bool):
        return b"\x10\x01" if v else b"\x10\x00"
    if isinstance(v, int):
        return b"\x18" + varint(v & 0xFFFFFFFFFFFFFFFF)  # int64, two's complement
    if isinstance(v, float):
        return b"\x21" + _double(v)
    return field(0x0A, str(v).encode())


def key_value(tag: int, key: str, v: Any) -> bytes:
    return field(tag, field(0x0A, key.encode()) + field(0x12, any_value(v)))


def head(name: str, kind: int, attributes: Mapping[str, Any], error: str | None = None) -> bytes:
    """What spans with this name, kind, attributes and status share, encoded (cache it: see the module's doc)."""
    out = field(0x2A, name.encode()) + bytes((0x30, kind)) + Shared(attributes).encoded
    return out + status(error) if error is not None else out


def status(error: str) -> bytes:
    """A ``Status`` with code ERROR and this message."""
    return field(0x7A, field(0x12, error.encode()) + bytes((0x18, _ERROR)))


def double_attribute(key: str) -> bytes:
    """A double-valued span attribute up to its 8 value bytes (``struct`` format ``{len}s`` then ``d``)."""
    kf = field(0x0A, key.encode())
    return bytes((0x4A, len(kf) + 11)) + kf + b"\x12\x09\x21"


def string_attribute(key: bytes, v: str) -> bytes:
    """A string-valued span attribute; ``key`` is its KeyValue's key field (``field(0x0A, key.encode())``)."""
    b = v.encode()
    inner = len(key) + len(b) + 4
    if inner < 128 and len(b) < 124:  # every length fits in one byte
        return b"".join((_KV[inner], key, _STRING[len(b)], b))
    return field(0x4A, key + field(0x12, field(0x0A, b)))


class SpanEncoder:
    """``SpanData`` as each span's two pieces (see the module's doc); caches the heads and the attributes that
    repeat. Not thread-safe (the builder's, on the loop)."""

    def __init__(self) -> None:
        self._attrs: dict[tuple[str, Any, type], bytes] = {}
        self._heads: dict[tuple[str, int], bytes] = {}

    def spans(self, spans: Iterable[SpanData], out: list[bytes] | None = None) -> list[bytes]:
        out = [] if out is None else out
        cache, heads = self._attrs, self._heads
        for trace_id, span_id, parent_id, name, kind, start, end, shared, attributes, error in spans:
            if (found := heads.get((name, kind))) is None:
                if len(heads) >= _CACHE_MAX:
                    heads.clear()
                found = heads[(name, kind)] = field(0x2A, name.encode()) + bytes((0x30, kind))
            if shared is not None:
                found += shared.encoded
            if parent_id:
                fixed = _FIXED_CHILD(0x100A, trace_id, 0x0812, span_id, 0x0822, parent_id, 0x39, start, 0x41, end)
            else:
                fixed = _FIXED_ROOT(0x100A, trace_id, 0x0812, span_id, 0x39, start, 0x41, end)
            parts = [fixed, found]
            for k, v in attributes.items():
                t = v.__class__
                if t is float or k in _UNIQUE:
                    parts.append(key_value(0x4A, k, v))
                elif (kv := cache.get((k, v, t))) is not None:
                    parts.append(kv)
                else:
                    if len(cache) >= _CACHE_MAX:
                        cache.clear()
                    kv = cache[(k, v, t)] = key_value(0x4A, k, v)
                    parts.append(kv)
            if error is not None:
                parts.append(status(error))
            body = b"".join(parts)
            out += (span_tag(len(body)), body)
        return out


#: Attributes whose values rarely repeat: encoded each time instead of filling the cache.
_UNIQUE = frozenset({"gen_ai.tool.call.id", "ava.call.id"})


class Encoder:
    """Writes export requests for one resource and instrumentation scope."""

    def __init__(self, resource: Mapping[str, Any], scope: str, scope_version: str = "") -> None:
        self._resource = field(0x0A, b"".join(key_value(0x0A, k, v) for k, v in resource.items()))
        scope_msg = field(0x0A, scope.encode()) + (field(0x12, scope_version.encode()) if scope_version else b"")
        self._scope = field(0x0A, scope_msg)
        self._spans = SpanEncoder()

    def request(self, spans: Iterable[SpanData]) -> bytes:
        return self.wrap(self._spans.spans(spans))

    def wrap(self, pieces: list[bytes]) -> bytes:
        """The export request carrying these spans (each as its two pieces), written in one join."""
        n = len(self._scope) + sum(map(len, pieces))  # the ScopeSpans message
        inner = len(self._resource) + 1 + len(varint(n)) + n  # the ResourceSpans message
        return b"".join([b"\x0a", varint(inner), self._resource, b"\x12", varint(n), self._scope, *pieces])


#: Ahead of time for every length below 128: a span attribute's tag and length (``_KV``), and the head of a KeyValue's
#: value holding a string of that length (``_STRING``: value's tag and length, then string_value's).
_KV = [bytes((0x4A, n)) for n in range(128)]
_STRING = [bytes((0x12, n + 2, 0x0A, n)) for n in range(124)]


#: A span's fixed part: trace_id (1, bytes), span_id (2, bytes), [parent_span_id (4, bytes)], start and end times
#: (7, 8: fixed64), each after its tag (two-byte tags packed as little-endian shorts).
_FIXED_ROOT = struct.Struct("<H16sH8sBQBQ").pack
_FIXED_CHILD = struct.Struct("<H16sH8sH8sBQBQ").pack
CHILD, ROOT = _FIXED_CHILD, _FIXED_ROOT
#: The key field of a tool span's ``gen_ai.tool.call.id``, and the attribute up to its value's bytes for an ASCII
#: value of each length below 100.
CALL_ID = field(0x0A, b"gen_ai.tool.call.id")
CALL_IDS = [_KV[len(CALL_ID) + n + 4] + CALL_ID + _STRING[n] for n in range(100)]


def child_with_double(key: str) -> tuple[Any, bytes]:
    """A packer of a child span's fixed part with one double attribute after it, and that attribute's head."""
    h = double_attribute(key)
    return struct.Struct(f"<H16sH8sH8sBQBQ{len(h)}sd").pack, h
