"""Checking a tool's ``structuredContent`` against its ``outputSchema`` at the engine's speed, not jsonschema's.

Why it exists: the SDK checks every successful ``tools/call`` result against the tool's output schema with a
compiled ``jsonschema`` validator, ~34 µs per call on a one-field result: the largest single cost of a call on the
client side, more than everything the engine adds to it. The engine keeps the check (a server that lies about its
result's shape must not feed the model a wrong shape) but runs its own compiled argument validator first
(``engine.tools.validation``: Draft 2020-12 with stricter patterns and formats, a microsecond or two): a result it
passes is valid for jsonschema too, so it is done. Anything else — a result it finds fault with, no structured
content, a schema outside its fast subset, a tool the listing did not name — goes to the SDK's own check, which
raises its usual error (``engine.mcp.structured.mismatch`` words it) or lets a result pass that only the engine's
stricter rules doubted.

``ResultChecks.install`` puts the check in place of the SDK session's ``validate_tool_result`` (the method its
``call_tool`` awaits on both protocol eras, multi-round-trip calls included); ``learn`` takes each tool listing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from mcp import types

from engine.tools.validation import ArgumentValidator, validator_for

SdkCheck = Callable[[str, types.CallToolResult], Awaitable[None]]


class ResultChecks:
    """One connection's output schemas by tool name, and the check that uses them."""

    def __init__(self) -> None:
        #: Every listed tool's output schema (None: it declares none).
        self._schemas: dict[str, dict[str, Any] | None] = {}
        #: Validators built on a tool's first result (compiling costs far more than checking).
        self._validators: dict[str, ArgumentValidator] = {}
        self._sdk_check: SdkCheck | None = None

    def learn(self, tools: Iterable[types.Tool]) -> None:
        """Take a whole listing: tools gone are forgotten, a changed schema gets a new validator."""
        schemas = {t.name: t.output_schema for t in tools}
        for name, validator in list(self._validators.items()):
            if schemas.get(name) != validator.schema:
                del self._validators[name]
        self._schemas = schemas

    def install(self, session: Any) -> None:
        """Check ``session``'s results here first; the SDK's own check stays behind it."""
        self._sdk_check = session.validate_tool_result
        session.validate_tool_result = self.check

    async def check(self, name: str, result: types.CallToolResult) -> None:
        """What the SDK's ``validate_tool_result`` does, quickly for a result that is plainly valid."""
        if name in self._schemas:
            schema = self._schemas[name]
            if schema is None:
                return
            structured = result.structured_content
            if structured is not None:
                validator = self._validators.get(name)
                if validator is None:
                    validator = self._validators[name] = validator_for(schema)
                if validator.fast and not validator.violations(structured):
                    return
        if self._sdk_check is not None:
            await self._sdk_check(name, result)
