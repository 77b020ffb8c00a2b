"""Transfer tools: ``transfer`` (warm), ``blind_transfer`` and ``cancel_transfer`` for phone calls.

Why they are tools of their own with a narrow seam: a transfer is call control (ARI, bridges, the provider
session), which lives in the telephony layer above the tools. A phone call registers a ``TransferControl`` in
``PhoneLines`` under its engine call id; the tools find the call they run in there and hand it the resolved
target. Destinations come from ``tools.extensions`` (by name or alias, case-insensitive); an unknown one is
answered with the list of valid destinations so the model can say them to the caller.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Literal, Protocol

from engine.config.models.tools import TransferTarget
from engine.text.spoken_lists import spoken_list
from engine.tools.base import (
    LatencyMeta,
    Tool,
    ToolCategory,
    ToolDefinition,
    ToolExecutionContext,
    ToolParameter,
    ToolResult,
)

TransferMode = Literal["warm", "blind"]


class TransferControl(Protocol):
    """What a live phone call offers the transfer tools."""

    async def transfer(self, name: str, target: TransferTarget, mode: TransferMode) -> ToolResult: ...

    async def cancel_transfer(self) -> ToolResult: ...


class PhoneLines:
    """Live phone calls by engine call id (registered by telephony while the call runs)."""

    def __init__(self) -> None:
        self._lines: dict[str, TransferControl] = {}

    def register(self, call_id: str, control: TransferControl) -> None:
        self._lines[call_id] = control

    def unregister(self, call_id: str) -> None:
        self._lines.pop(call_id, None)

    def get(self, call_id: str) -> TransferControl | None:
        return self._lines.get(call_id)


def resolve_destination(extensions: Mapping[str, TransferTarget], wanted: str) -> tuple[str, TransferTarget] | None:
    """The configured destination a caller's word names (its key or an alias, any case), or None."""
    key = " ".join(wanted.lower().split())
    for name, target in extensions.items():
        if key == name.lower() or key in (a.lower() for a in target.aliases):
            return name, target
    return None


def _extensions_said(names: list[str]) -> str:
    return spoken_list(names, "or") or "nobody"


class _TransferBase(Tool):
    mode: TransferMode = "warm"

    def __init__(self, extensions: Callable[[], Mapping[str, TransferTarget]], lines: PhoneLines) -> None:
        self.extensions = extensions  # read per call: a reload that changes tools.extensions applies at once
        self.lines = lines
        names = ", ".join(f"{n} ({t.description})" if t.description else n for n, t in extensions().items())
        self.definition = ToolDefinition(
            name=self.definition.name,
            description=f"{self.definition.description} Destinations: {names or 'none configured'}.",
            category=ToolCategory.TELEPHONY,
            parameters=self.definition.parameters,
            latency=self.definition.latency,
        )

    async def execute(self, args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        wanted = str(args.get("destination", "")).strip()
        extensions = self.extensions()
        found = resolve_destination(extensions, wanted)
        if found is None:
            valid = _extensions_said(list(extensions))
            return ToolResult.error(
                f"I can't transfer to {wanted or 'that'}. I can transfer you to {valid}.",
                {"destination": wanted, "valid": list(extensions)},
            )
        control = self.lines.get(ctx.call_id)
        if control is None:
            return ToolResult.error("Transfers work on phone calls only; this call has no phone line.")
        return await control.transfer(found[0], found[1], self.mode)


_DESTINATION = (ToolParameter("destination", "string", "Who to transfer to (a destination name).", required=True),)


class TransferTool(_TransferBase):
    """Warm transfer: the caller waits with music while the target rings; the AI steps out once it answers."""

    mode: TransferMode = "warm"
    definition = ToolDefinition(
        name="transfer",
        description=(
            "Transfer the caller to a person. The caller hears music while the target rings; if nobody answers "
            "you stay on the call and can tell the caller."
        ),
        category=ToolCategory.TELEPHONY,
        parameters=_DESTINATION,
        latency=LatencyMeta(estimated_duration_ms=50, max_duration_ms=2000, idempotent=False),
    )


class BlindTransferTool(_TransferBase):
    """Blind transfer: the AI leaves at once and the caller rings through to the target."""

    mode: TransferMode = "blind"
    definition = ToolDefinition(
        name="blind_transfer",
        description="Hand the caller straight over to a destination; you leave the call at once.",
        category=ToolCategory.TELEPHONY,
        parameters=_DESTINATION,
        latency=LatencyMeta(estimated_duration_ms=50, max_duration_ms=2000, idempotent=False),
    )


class CancelTransferTool(Tool):
    definition = ToolDefinition(
        name="cancel_transfer",
        description="Stop a transfer that is still ringing (the caller changed their mind) and stay on the call.",
        category=ToolCategory.TELEPHONY,
        parameters=(),
        latency=LatencyMeta(estimated_duration_ms=50, max_duration_ms=2000, idempotent=True),
    )

    def __init__(self, lines: PhoneLines) -> None:
        self.lines = lines

    async def execute(self, args: dict[str, Any], ctx: ToolExecutionContext) -> ToolResult:
        control = self.lines.get(ctx.call_id)
        if control is None:
            return ToolResult.error("There is no transfer to cancel on this call.")
        return await control.cancel_transfer()
