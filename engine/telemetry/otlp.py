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

    __slots__ = ("attributes", "encoded", "head", "kind", "name")

    def __init__(self, attributes: Mapping[str, Any]) -> None:
        self.attributes = attributes
        self.encoded: bytes | None = None
        #: The encoder's name and kind (``name``, ``kind``) followed by ``encoded``, for the last name and kind seen.
        self.name: str | None = None
        self.kind = 0
        self.head = b""


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
        #: name and kind, by (name, kind), for spans without shared attributes
        self._heads: dict[tuple[str, int], bytes] = {}
        self._keys: dict[str, bytes] = {}  # a KeyValue's key field, by key
        self._short_keys: dict[str, bytes] = {}  # those below 117 bytes: every length after them fits in one byte

    def request(self, spans: Iterable[SpanData]) -> bytes:
        return self.wrap(self.spans(spans))

    def wrap(self, encoded: Iterable[bytes]) -> bytes:
        """The export request carrying these spans (each as ``spans`` wrote it)."""
        parts: list[bytes] = []
        for b in encoded:
            n = len(b)
            parts += (b"\x12", _VARINTS[n] if n < _SMALL else _slow_varint(n), b)
        body = b"".join(parts)
        return field(0x0A, self._resource + field(0x12, self._scope + body))

    def spans(self, spans: Iterable[SpanData]) -> list[bytes]:
        """Each span's ``Span`` message, in one pass (no call per span on the common paths)."""
        out: list[bytes] = []
        add, join, heads, cache, keys = out.append, b"".join, self._heads, self._attrs, self._short_keys
        for trace_id, span_id, parent_id, name, kind, start, end, shared, attributes, error in spans:
            if shared is not None and shared.name is name and shared.kind == kind:
                head = shared.head
            elif shared is not None or (found := heads.get((name, kind))) is None:
                head = self._head(name, kind, shared)
            else:
                head = found
            if parent_id:
                fixed = _FIXED_CHILD(0x100A, trace_id, 0x0812, span_id, 0x0822, parent_id, 0x39, start, 0x41, end)
            else:
                fixed = _FIXED_ROOT(0x100A, trace_id, 0x0812, span_id, 0x39, start, 0x41, end)
            parts = [fixed, head]
            for k, v in attributes.items():
                t = v.__class__
                if t is float and (kf := keys.get(k)) is not None:  # a measured value: only its key is cached
                    parts += (_KV[len(kf) + 11], kf, b"\x12\x09\x21", _double(v))
                elif t is str and k in _UNIQUE and (kf := keys.get(k)) and len(kf) + len(v) < 124 and v.isascii():
                    parts += (_KV[len(kf) + len(v) + 4], kf, _STRING[len(v)], v.encode())
                elif t is float or k in _UNIQUE:
                    parts.append(self._unique(k, v))
                elif (kv := cache.get((k, v, t))) is not None:
                    parts.append(kv)
                else:
                    if len(cache) >= _CACHE_MAX:
                        cache.clear()
                    kv = cache[(k, v, t)] = key_value(0x4A, k, v)
                    parts.append(kv)
            if error is not None:
                parts.append(field(0x7A, field(0x12, error.encode()) + bytes((0x18, _ERROR))))
            add(join(parts))
        return out

    def span(self, s: SpanData) -> bytes:
        return self.spans((s,))[0]

    def _head(self, name: str, kind: int, shared: Shared | None) -> bytes:
        """Name and kind, then the shared attributes: kept on the ``Shared`` (one per name and kind in practice)."""
        head = field(0x2A, name.encode()) + bytes((0x30, kind))
        if shared is None:
            if len(self._heads) >= _CACHE_MAX:
                self._heads.clear()
            self._heads[(name, kind)] = head
            return head
        if shared.encoded is None:
            shared.encoded = b"".join([key_value(0x4A, k, v) for k, v in shared.attributes.items()])
        head += shared.encoded
        shared.name, shared.kind, shared.head = name, kind, head
        return head

    def _unique(self, k: str, v: Any) -> bytes:
        """A KeyValue whose value rarely repeats (an id, a measured float): only its key is cached."""
        kf = self._keys.get(k)
        if kf is None:
            kf = self._keys[k] = field(0x0A, k.encode())
            if len(kf) < 117:
                self._short_keys[k] = kf
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
