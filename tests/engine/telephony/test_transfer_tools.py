"""The transfer tools' own rules: destinations by name or alias, unknown ones answered with the valid list."""

from __future__ import annotations

from typing import Any

from engine.config.models.tools import TransferTarget
from engine.tools.base import ToolExecutionContext, ToolResult
from engine.tools.builtin.transfer import (
    BlindTransferTool,
    CancelTransferTool,
    PhoneLines,
    TransferMode,
    TransferTool,
    resolve_destination,
)

EXT = {
    "support": TransferTarget(description="the support team", destination="PJSIP/6000", aliases=["agent", "Human"]),
    "sales": TransferTarget(destination="SIP/6001"),
}


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, TransferMode]] = []

    async def transfer(self, name: str, target: TransferTarget, mode: TransferMode) -> ToolResult:
        self.calls.append((name, target.destination, mode))
        return ToolResult.success(f"to {name}")

    async def cancel_transfer(self) -> ToolResult:
        return ToolResult.success("cancelled")


def ctx(call_id: str = "call-1") -> ToolExecutionContext:
    def emit(_: Any) -> None:
        return None

    return ToolExecutionContext(call_id, None, None, emit)


def test_resolution_by_name_or_alias_any_case() -> None:
    assert resolve_destination(EXT, "Support")[0] == "support"  # type: ignore[index]
    assert resolve_destination(EXT, "  human ")[0] == "support"  # type: ignore[index]
    assert resolve_destination(EXT, "SALES")[0] == "sales"  # type: ignore[index]
    assert resolve_destination(EXT, "billing") is None


async def test_tools_reach_the_phone_line_of_their_call() -> None:
    lines, line = PhoneLines(), Recorder()
    lines.register("call-1", line)
    warm, blind = TransferTool(lambda: EXT, lines), BlindTransferTool(lambda: EXT, lines)
    assert "support (the support team), sales" in warm.definition.description
    assert (await warm.execute({"destination": "agent"}, ctx())).status == "success"
    assert (await blind.execute({"destination": "sales"}, ctx())).status == "success"
    assert line.calls == [("support", "PJSIP/6000", "warm"), ("sales", "SIP/6001", "blind")]
    assert (await CancelTransferTool(lines).execute({}, ctx())).message == "cancelled"


async def test_unknown_destination_and_no_phone_line() -> None:
    lines = PhoneLines()
    tool = TransferTool(lambda: EXT, lines)
    unknown = await tool.execute({"destination": "billing"}, ctx())
    assert unknown.status == "error"
    assert unknown.message == "I can't transfer to billing. I can transfer you to support or sales."
    assert unknown.data == {"destination": "billing", "valid": ["support", "sales"]}
    not_phone = await tool.execute({"destination": "support"}, ctx("typed-call"))
    assert not_phone.status == "error" and "phone calls only" in not_phone.message
    assert (await CancelTransferTool(lines).execute({}, ctx())).status == "error"
