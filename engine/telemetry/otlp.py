"""Spans as OTLP protobuf bytes (an ``ExportTraceServiceRequest``), written field by field.

Why by hand: the SDK's path (a ``Span`` per span, then ``encode_spans`` building one generated message per span,
attribute and value) costs tens of µs a span, which is more than the tool path it traces (issue 36 item 5). The wire
format of the few messages a span needs is small and fixed (opentelemetry-proto's trace.proto, common.proto and
resource.proto); the tests decode what is written here with the generated classes, as a collector does. The
attributes that repeat (names, statuses, tiers, flags) are encoded once and reused.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

#: ``Span.SpanKind`` values.
INTERNAL, SERVER, CLIENT = 1, 2, 3
#: ``Status.StatusCode.STATUS_CODE_ERROR``.
_ERROR = 2
#: Attributes whose values rarely repeat: encoded each time instead of filling the cache.
_UNIQUE = frozenset({"gen_ai.tool.call.id", "ava.call.id"})
_CACHE_MAX = 4096
_double = struct.Struct("<d").pack


class Shared:
    """Attributes many spans carry alike (a tool's name, server and status; a turn's tier and budget): the builder
    keeps one per distinct set, and each is encoded once."""

    __slots__ = ("attributes", "encoded")

    def __init__(self, attributes: Mapping[str, Any]) -> None:
        self.attributes = attributes
        self.encoded: bytes | None = None


class SpanData(NamedTuple):
    """One finished span, as the builder hands it to the exporters (ids as big-endian bytes, times in ns)."""

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


class Encoder:
    """Writes export requests for one resource and instrumentation scope; not thread-safe (one exporter thread).

    A span is one packed fixed part (trace and span ids, times), its parent's id, then bytes cached by what repeats:
    the name and kind with the shared attributes after them, and each own attribute whose value repeats."""

    def __init__(self, resource: Mapping[str, Any], scope: str, scope_version: str = "") -> None:
        self._resource = field(0x0A, b"".join(key_value(0x0A, k, v) for k, v in resource.items()))
        scope_msg = field(0x0A, scope.encode()) + (field(0x12, scope_version.encode()) if scope_version else b"")
        self._scope = field(0x0A, scope_msg)
        self._attrs: dict[tuple[str, Any, type], bytes] = {}
        #: name and kind, then the shared attributes, by (name, kind, shared)
        self._heads: dict[tuple[str, int, Shared | None], bytes] = {}
        self._keys: dict[str, bytes] = {}  # a KeyValue's key field, by key

    def request(self, spans: Iterable[SpanData]) -> bytes:
        span = self.span
        parts: list[bytes] = []
        for s in spans:
            b = span(s)
            n = len(b)
            parts += (b"\x12", _VARINTS[n] if n < _SMALL else _slow_varint(n), b)
        body = b"".join(parts)
        return field(0x0A, self._resource + field(0x12, self._scope + body))

    def span(self, s: SpanData) -> bytes:
        trace_id, span_id, parent_id, name, kind, start, end, shared, attributes, error = s
        head = self._heads.get((name, kind, shared))
        if head is None:
            head = self._head(name, kind, shared)
        if parent_id:
            parts = [_FIXED_CHILD(0x100A, trace_id, 0x0812, span_id, 0x0822, parent_id, 0x39, start, 0x41, end), head]
        else:
            parts = [_FIXED_ROOT(0x100A, trace_id, 0x0812, span_id, 0x39, start, 0x41, end), head]
        if attributes:
            cache = self._attrs
            for k, v in attributes.items():
                if k in _UNIQUE or type(v) is float:
                    parts.append(self._unique(k, v))
                    continue
                key = (k, v, type(v))
                kv = cache.get(key)
                if kv is None:
                    if len(cache) >= _CACHE_MAX:
                        cache.clear()
                    kv = cache[key] = key_value(0x4A, k, v)
                parts.append(kv)
        if error is not None:
            parts.append(field(0x7A, field(0x12, error.encode()) + bytes((0x18, _ERROR))))
        return b"".join(parts)

    def _head(self, name: str, kind: int, shared: Shared | None) -> bytes:
        if len(self._heads) >= _CACHE_MAX:
            self._heads.clear()
        head = field(0x2A, name.encode()) + bytes((0x30, kind))
        if shared is not None:
            if shared.encoded is None:
                shared.encoded = b"".join([key_value(0x4A, k, v) for k, v in shared.attributes.items()])
            head += shared.encoded
        self._heads[(name, kind, shared)] = head
        return head

    def _unique(self, k: str, v: Any) -> bytes:
        """A KeyValue whose value rarely repeats (an id, a measured float): only its key is cached."""
        kf = self._keys.get(k)
        if kf is None:
            kf = self._keys[k] = field(0x0A, k.encode())
        if type(v) is str:
            b = v.encode()
            inner = len(kf) + len(b) + 4
            if inner < 128:  # every length fits in one byte
                return b"".join((_KV[inner], kf, _STRING[len(b)], b))
        elif type(v) is float and len(kf) < 117:  # AnyValue.double_value: 9 bytes
            return b"".join((_KV[len(kf) + 11], kf, b"\x12\x09\x21", _double(v)))
        av = any_value(v)
        inner = len(kf) + 1 + len(varint(len(av))) + len(av)
        return b"".join((b"\x4a", varint(inner), kf, b"\x12", varint(len(av)), av))


#: Ahead of time for every length below 128: a span attribute's tag and length (``_KV``), and the head of a KeyValue's
#: value holding a string of that length (``_STRING``: value's tag and length, then string_value's).
_KV = [bytes((0x4A, n)) for n in range(128)]
_STRING = [bytes((0x12, n + 2, 0x0A, n)) for n in range(124)]


#: A span's fixed part: trace_id (1, bytes), span_id (2, bytes), [parent_span_id (4, bytes)], start and end times
#: (7, 8: fixed64), each after its tag (two-byte tags packed as little-endian shorts).
_FIXED_ROOT = struct.Struct("<H16sH8sBQBQ").pack
_FIXED_CHILD = struct.Struct("<H16sH8sH8sBQBQ").pack
