"""The one command dispatcher (engine.operator.control) on a real Engine: each remote command reaches the
engine's method with validated arguments and answers JSON; bad input, an unknown command, call or approval are clear
errors naming the engine, the command and the argument; secrets never appear in an error."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from engine.app import Engine
from engine.events import ToolApprovalRequested, ToolsChanged
from engine.operator.control import ARGS, CommandDispatcher, CommandError, ControlOps
from engine.redaction.redactor import MASK
from engine.remote.base import COMMANDS
from tests.engine.core.helpers import echo_tool, settings_with
from tests.engine.core.test_approvals import DELETE_INTENT, Counting, next_of

ECHO = {
    "name": "echo",
    "patterns": [r"echo (?P<text>\w+)"],
    "tools": [{"name": "echo", "args": {"text": "{text}"}}],
    "reply": "I said {result}.",
}


def make(tmp_path: Path, **engine: Any) -> Engine:
    settings = settings_with(tmp_path, [ECHO], ["echo"], engine={"id": "e7", **engine})
    return Engine(settings, extra_tools=[echo_tool()])


async def test_every_remote_command_has_a_handler_and_an_argument_model(tmp_path: Path) -> None:
    d = make(tmp_path).control
    assert set(ARGS) == set(COMMANDS)
    for name in COMMANDS:
        assert callable(getattr(d, f"_{name}")), name


def test_the_dispatcher_is_handed_the_parts_methods_never_the_engine(tmp_path: Path) -> None:
    engine = make(tmp_path)
    ops = engine.control.ops
    assert isinstance(ops, ControlOps)
    owners = {name: getattr(op, "__self__", None) for name, op in vars(ops).items()}
    assert engine not in owners.values()
    assert owners["say_now"] is engine.steering and owners["drain"] is engine.operator
    assert owners["set_tier"] is engine.switches and owners["server_status"] is engine.servers
    assert owners["live_session"] is engine.sessions and owners["end_call"] is engine.calls


async def test_call_commands_reach_the_engine_and_answer_json(tmp_path: Path) -> None:
    engine = make(tmp_path)
    d = engine.control
    async with engine:
        call = await engine.start_call("c")
        cid = call.call_id
        sub = engine.bus.subscribe()
        got = await d.run("set_tier", {"call_id": cid, "tier": "deep"})
        assert got["tier"] == "deep" and got["call"]["tier"] == "deep" and got["call"]["tier_override"] == "deep"
        assert engine.call_info(cid).tier == "deep"  # type: ignore[union-attr]
        assert (await d.run("set_tier", {"call_id": None, "tier": "fast"}))["call"] is None
        assert engine.default_tier == "fast"
        got = await d.run("set_tool_enabled", {"call_id": cid, "exposed_name": "echo", "enabled": False})
        assert got == {
            "call_id": cid,
            "exposed_name": "echo",
            "enabled": False,
            "apply": "next_turn",
            "restarted": False,
        }
        assert call.tool_overrides == {"echo": False}
        changed = await next_of(sub, ToolsChanged)
        assert changed.removed == ("echo",) and changed.call_id == cid
        view = await d.run("tool_states", {"call_id": cid})  # what an attached console's tools table shows
        echo = next(t for t in view["tools"] if t["name"] == "echo")
        assert (echo["shown"], echo["enabled"]) == (False, False) and echo["reason"]
        assert view["tools"] == [dataclasses.asdict(t) for t in engine.tool_states(cid)]
        said = await d.run("say_now", {"call_id": cid, "text": "One moment please."})
        assert said == {"call_id": cid, "via": "text"}
        whispered = await d.run("whisper", {"call_id": cid, "text": "be brief"})
        assert whispered["via"] == "system prompt of the next turn" and call.whispers == ["be brief"]
        listed = await d.run("calls_info", {})
        assert [c["call_id"] for c in listed["calls"]] == [cid] and listed["calls"][0]["context"] == "c"
        json.dumps(listed)
        assert (await d.run("drain", {}))["draining"] is True and engine.admission.draining
        assert (await d.run("resume", None))["draining"] is False
        status = await d.run("server_status", {})
        json.dumps(status)
        ended = await d.run("end_call", {"call_id": cid, "reason": "operator hung up"})
        assert ended == {"call_id": cid, "ended": True, "reason": "operator hung up"}
        assert engine.call_info(cid) is None
        with pytest.raises(CommandError, match=rf"say_now: no live call '{cid}' on engine e7") as err:
            await d.run("say_now", {"call_id": cid, "text": "hello?"})
        assert err.value.kind == "not_found"


async def test_bad_arguments_name_the_command_and_the_argument(tmp_path: Path) -> None:
    engine = make(tmp_path)
    d = engine.control
    async with engine:
        cid = (await engine.start_call("c")).call_id
        cases: list[tuple[str, Any, str]] = [
            ("set_tier", {"call_id": cid, "tier": "turbo"}, r"set_tier on engine e7: argument 'tier': Input should be"),
            ("set_tier", {"tier": "fast"}, r"argument 'call_id' is missing \(set_tier takes call_id, tier\)"),
            ("set_tool_enabled", {"call_id": cid, "exposed_name": "echo", "enabled": "yes"}, r"argument 'enabled'"),
            (
                "set_tool_enabled",
                {"call_id": cid, "exposed_name": "echo", "enabled": True, "apply": "later"},
                r"argument 'apply'",
            ),
            (
                "end_call",
                {"call_id": cid, "force": True},
                r"argument 'force' is not known \(end_call takes call_id, "
                r"reason\)",
            ),
            ("drain", {"now": 1}, r"drain on engine e7: argument 'now' is not known \(drain takes no arguments\)"),
            ("say_now", {"call_id": 7, "text": "x"}, r"argument 'call_id': Input should be a valid string"),
            ("say_now", [cid, "x"], r"say_now on engine e7: the arguments must be a JSON object, not list"),
            ("whisper", {"call_id": "", "text": "x"}, r"argument 'call_id': String should have at least 1"),
        ]
        for name, args, words in cases:
            with pytest.raises(CommandError, match=words) as err:
                await d.run(name, args)
            assert err.value.kind == "bad_request", (name, args)
        assert engine.call_info(cid) is not None and engine.default_tier == "auto"  # nothing ran
        with pytest.raises(CommandError, match=r"say_now on engine e7 failed: the say-now line is empty") as err:
            await d.run("say_now", {"call_id": cid, "text": "   "})
        assert err.value.kind == "failed"


async def test_unknown_command_call_and_approval_are_clear(tmp_path: Path) -> None:
    engine = make(tmp_path)
    d = engine.control
    async with engine:
        with pytest.raises(CommandError, match=r"unknown command 'reboot' for engine e7 \(one of set_tier, ") as err:
            await d.run("reboot", {})
        assert err.value.kind == "not_found"
        for name, args in (
            ("set_tier", {"call_id": "c-404", "tier": "fast"}),
            ("set_tool_enabled", {"call_id": "c-404", "exposed_name": "echo", "enabled": True}),
            ("end_call", {"call_id": "c-404"}),
            ("whisper", {"call_id": "c-404", "text": "hi"}),
            ("transfer_call", {"call_id": "c-404", "destination": "sales"}),
        ):
            with pytest.raises(CommandError, match=rf"{name}: no live call 'c-404' on engine e7") as err:
                await d.run(name, args)
            assert err.value.kind == "not_found"
        with pytest.raises(CommandError, match=r"approve_tool on engine e7: .*ap-404") as err:
            await d.run("approve_tool", {"approval_id": "ap-404"})
        assert err.value.kind == "not_found"


async def test_approve_and_deny_answer_the_pending_approval(tmp_path: Path) -> None:
    tool = Counting()
    settings = settings_with(tmp_path, [DELETE_INTENT], ["delete_note"], engine={"id": "e7"})
    ctx = settings.contexts["c"].model_copy(update={"approve": ["delete_note"]})
    engine = Engine(settings.model_copy(update={"contexts": {"c": ctx}}), extra_tools=[tool.tool])
    d = engine.control
    async with engine:
        engine.attach_approver("remote console")
        sub = engine.bus.subscribe()
        call = await engine.start_call("c")
        turn = asyncio.create_task(engine.user_said(call.call_id, "delete shopping"))
        req = await next_of(sub, ToolApprovalRequested)
        for by in ("\ud800", "ada\x1b[2J"):  # refused before anything is applied: the approval still waits
            with pytest.raises(CommandError, match=r"approve_tool on engine e7: argument 'by': ") as err:
                await d.run("approve_tool", {"approval_id": req.approval_id, "by": by})
            assert err.value.kind == "bad_request"
        assert [p.approval_id for p in engine.pending_approvals()] == [req.approval_id] and tool.runs == []
        got = await d.run("approve_tool", {"approval_id": req.approval_id, "by": "ada@console"})
        assert got == {"approval_id": req.approval_id, "approved": True, "by": "ada@console"}
        await turn
        assert tool.runs == [{"name": "shopping"}]
        with pytest.raises(CommandError, match=r"deny_tool on engine e7: .*no longer pending: it was approved") as err:
            await d.run("deny_tool", {"approval_id": req.approval_id, "reason": "late"})
        assert err.value.kind == "not_found"
        turn = asyncio.create_task(engine.user_said(call.call_id, "delete notes"))
        req = await next_of(sub, ToolApprovalRequested)
        got = await d.run("deny_tool", {"approval_id": req.approval_id, "reason": "not today"})
        assert got["approved"] is False and got["reason"] == "not today"
        await turn
        assert tool.runs == [{"name": "shopping"}]  # the denied one never ran


class _Transfers:
    """A phone line's transfer standing in (the ARI side is tested in tests/engine/telephony)."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str, str]] = []

    async def transfer_call(self, call_id: str, destination: str, mode: str = "blind") -> dict[str, object]:
        self.asked.append((call_id, destination, mode))
        return {"ok": True, "message": "Transferring you now.", "target": destination, "mode": mode}


async def test_transfer_call_maps_its_arguments_and_a_text_call_is_refused(tmp_path: Path) -> None:
    engine = make(tmp_path)
    async with engine:
        cid = (await engine.start_call("c")).call_id
        target = _Transfers()
        d = CommandDispatcher(dataclasses.replace(engine.control.ops, transfer_call=target.transfer_call), lambda: "e7")
        got = await d.run("transfer_call", {"call_id": cid, "destination": "sales", "mode": "warm"})
        assert got == {
            "call_id": cid,
            "destination": "sales",
            "ok": True,
            "message": "Transferring you now.",
            "target": "sales",
            "mode": "warm",
        }
        await d.run("transfer_call", {"call_id": cid, "destination": "sales"})
        assert target.asked == [(cid, "sales", "warm"), (cid, "sales", "blind")]
        with pytest.raises(CommandError, match=r"argument 'mode': Input should be 'blind' or 'warm'") as err:
            await d.run("transfer_call", {"call_id": cid, "destination": "sales", "mode": "attended"})
        assert err.value.kind == "bad_request" and len(target.asked) == 2
        with pytest.raises(CommandError, match=rf"transfer_call on engine e7 failed: call '{cid}' has no phone line"):
            await engine.control.run("transfer_call", {"call_id": cid, "destination": "sales"})


async def test_errors_never_carry_a_secret(tmp_path: Path) -> None:
    canary = "sk-canary-control-99"
    settings = settings_with(
        tmp_path,
        [ECHO],
        ["echo"],
        engine={"id": "e7"},
        providers={
            "s": {"type": "scripted", "script": str(tmp_path / "script.yaml")},
            "o": {"type": "openai_chat", "model": "m", "api_key": canary},
        },
    )
    engine = Engine(settings, extra_tools=[echo_tool()])
    d = engine.control
    async with engine:
        for name, args, echoed in (
            ("say_now", {"call_id": canary, "text": "x"}, True),
            ("set_tier", {"call_id": None, "tier": canary}, False),
            (canary, {}, True),
            ("drain", {canary: 1}, True),
        ):
            with pytest.raises(CommandError) as err:
                await d.run(name, args)
            assert canary not in str(err.value) and (MASK in str(err.value)) is echoed, str(err.value)
