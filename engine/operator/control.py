"""The one command dispatcher: an operator command by name with JSON arguments → the engine's method → a JSON answer.

Why it exists: a console attached to engines elsewhere sends commands by name (``engine.remote.base.COMMANDS``)
over two transports, the Redis control stream (``engine.store.control``) and one engine's HTTP API. Both hand the
name and the arguments as they arrived to ``CommandDispatcher.run``, so the checks (known command, a pydantic model
per command refusing unknown and ill-typed arguments, a live call for the call commands), the mapping onto the
engine's public method and the answer's shape exist once. Every failure is a ``CommandError`` whose message names
the engine, the command and (for bad input) the argument, and whose ``kind`` a transport maps onto its own codes.

The dispatcher gets a ``ControlOps`` record of the parts' methods it calls, never ``Engine`` itself.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from engine.remote.base import COMMANDS
from engine.sessions.snapshot import CallInfo, ToolState
from engine.tools.approvals import ApprovalError, answer_text

if TYPE_CHECKING:
    from engine.calls.manager import CallManager
    from engine.operator.approvals import ApprovalCommands
    from engine.operator.call_switches import CallSwitches
    from engine.operator.desk import OperatorDesk
    from engine.operator.servers import ServerDesk
    from engine.operator.steering import Steering
    from engine.sessions.session import CallSession
    from engine.sessions.store import SessionStore

log = logging.getLogger(__name__)

#: What went wrong, for a transport's status codes: the input (``bad_request``), no such command / call / approval
#: (``not_found``), a command this engine lacks (``unsupported``), or the command itself failed (``failed``).
ErrorKind = Literal["bad_request", "not_found", "unsupported", "failed"]


class CommandError(RuntimeError):
    """A command that was not run or failed; ``str()`` names the engine, the command and why; ``kind`` says which."""

    def __init__(self, message: str, kind: ErrorKind) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind


@dataclass(frozen=True)
class ControlOps:
    """The operations the commands map onto, each a part's own method, handed over by the composition root
    (``engine.components``): the session store, the call manager, the call switches, steering, approvals, the
    operator's desk and the MCP server desk."""

    live_session: Callable[[str], CallSession | None]
    live_sessions: Callable[[], list[CallSession]]
    end_call: Callable[[str, str], Awaitable[None]]
    set_tier: Callable[[str | None, str], None]
    set_tool_enabled: Callable[[str, str, bool, Literal["next_turn", "now"]], bool]
    tool_states: Callable[[str], list[ToolState]]
    say_now: Callable[[str, str], Awaitable[str]]
    whisper: Callable[[str, str], Awaitable[str]]
    approve_tool: Callable[[str, str], None]
    deny_tool: Callable[[str, str, str], None]
    transfer_call: Callable[[str, str, Literal["blind", "warm"]], Awaitable[dict[str, object]]]
    drain: Callable[[], dict[str, object]]
    resume: Callable[[], dict[str, object]]
    server_status: Callable[[], dict[str, Any]]

    @classmethod
    def of(
        cls,
        sessions: SessionStore,
        calls: CallManager,
        switches: CallSwitches,
        steering: Steering,
        approvals: ApprovalCommands,
        operator: OperatorDesk,
        servers: ServerDesk,
    ) -> ControlOps:
        """The operations, each its part's own method."""
        return cls(
            live_session=sessions.get,
            live_sessions=sessions.all,
            end_call=calls.end_call,
            set_tier=switches.set_tier,
            set_tool_enabled=switches.set_tool_enabled,
            tool_states=switches.tool_states,
            say_now=steering.say_now,
            whisper=steering.whisper,
            approve_tool=approvals.approve_tool,
            deny_tool=approvals.deny_tool,
            transfer_call=operator.transfer_call,
            drain=operator.drain,
            resume=operator.resume,
            server_status=servers.server_status,
        )


# ----------------------------------------------------------------------------------------------- argument models


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


CallId = Field(min_length=1, max_length=200)
Text = Field(max_length=20_000)  # the steering desk's own limit (steer_max_chars) applies after this bound


class SetTierArgs(_Args):
    call_id: str | None = Field(min_length=1, max_length=200)  # None: the engine's default tier
    tier: Literal["fast", "standard", "deep", "auto"]


class SetToolEnabledArgs(_Args):
    call_id: str = CallId
    exposed_name: str = Field(min_length=1, max_length=200)
    enabled: bool
    apply: Literal["next_turn", "now"] = "next_turn"


class EndCallArgs(_Args):
    call_id: str = CallId
    reason: str = Field(default="ended by operator", max_length=500)


class SteerArgs(_Args):
    call_id: str = CallId
    text: str = Text


class ApproveArgs(_Args):
    approval_id: str = Field(min_length=1, max_length=200)
    by: str = Field(default="operator", min_length=1, max_length=200)

    @field_validator("by")
    @classmethod
    def _by(cls, v: str) -> str:  # checked with the HTTP route's rule, before anything is applied
        return answer_text("by", v, 200, name=True)


class DenyArgs(ApproveArgs):
    reason: str = Field(default="", max_length=500)

    @field_validator("reason")
    @classmethod
    def _reason(cls, v: str) -> str:
        return answer_text("reason", v, 500)


class TransferArgs(_Args):
    call_id: str = CallId
    destination: str = Field(min_length=1, max_length=200)
    mode: Literal["blind", "warm"] = "blind"


class NoArgs(_Args):
    pass


class CallArgs(_Args):
    call_id: str = CallId


#: Each command's arguments (the same keyword arguments as the engine's method).
ARGS: dict[str, type[_Args]] = {
    "set_tier": SetTierArgs,
    "set_tool_enabled": SetToolEnabledArgs,
    "end_call": EndCallArgs,
    "say_now": SteerArgs,
    "whisper": SteerArgs,
    "approve_tool": ApproveArgs,
    "deny_tool": DenyArgs,
    "transfer_call": TransferArgs,
    "drain": NoArgs,
    "resume": NoArgs,
    "calls_info": NoArgs,
    "server_status": NoArgs,
    "tool_states": CallArgs,
}
assert set(ARGS) == set(COMMANDS), "every remote command has an argument model"


def _describe(command: str, e: ValidationError) -> str:
    """One line per bad argument, each naming it: ``set_tier: argument 'tier': Input should be 'fast', …``."""
    takes = ", ".join(ARGS[command].model_fields) or "no arguments"
    parts = []
    for err in e.errors():
        name = ".".join(str(p) for p in err["loc"]) or "(arguments)"
        if err["type"] == "extra_forbidden":
            parts.append(f"argument {name!r} is not known ({command} takes {takes})")
        elif err["type"] == "missing":
            parts.append(f"argument {name!r} is missing ({command} takes {takes})")
        else:
            parts.append(f"argument {name!r}: {err['msg']}")
    return "; ".join(parts)


def _jsonable(value: Any) -> Any:
    """The answer as plain JSON types (dataclass snapshots as dicts, anything else exotic as its string)."""

    def plain(o: Any) -> Any:
        return dataclasses.asdict(o) if dataclasses.is_dataclass(o) and not isinstance(o, type) else str(o)

    return json.loads(json.dumps(value, default=plain))


class CommandDispatcher:
    """Runs one operator command on the engine: ``await run(name, args)`` → a JSON object, or ``CommandError``."""

    def __init__(
        self, ops: ControlOps, engine_id: Callable[[], str], redact: Callable[[str], str] = lambda s: s
    ) -> None:
        self.ops = ops
        self._engine_id = engine_id
        #: Masks known secrets in error messages (an engine's exception text may quote a config value).
        self._redact = redact

    def _error(self, message: str, kind: ErrorKind) -> CommandError:
        return CommandError(self._redact(message), kind)

    async def run(self, command: str, args: Mapping[str, Any] | None = None) -> dict[str, Any]:
        engine = self._engine_id()
        if command not in ARGS:
            raise self._error(
                f"unknown command {command!r} for engine {engine} (one of {', '.join(COMMANDS)})", "not_found"
            )
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise self._error(
                f"{command} on engine {engine}: the arguments must be a JSON object, not {type(args).__name__}",
                "bad_request",
            )
        try:
            parsed = ARGS[command].model_validate(dict(args))
        except ValidationError as e:
            raise self._error(f"{command} on engine {engine}: {_describe(command, e)}", "bad_request") from None
        call_id = getattr(parsed, "call_id", None)
        if call_id is not None and self.ops.live_session(call_id) is None:
            raise self._error(f"{command}: no live call {call_id!r} on engine {engine}", "not_found")
        handler = getattr(self, f"_{command}")
        try:
            answer = await handler(parsed)
        except CommandError:
            raise
        except ApprovalError as e:  # no such pending approval (it says whether and how it was answered)
            raise self._error(f"{command} on engine {engine}: {e}", "not_found") from None
        except (ValueError, RuntimeError, LookupError) as e:  # CallError, ProviderError, a refused steering text …
            raise self._error(f"{command} on engine {engine} failed: {e}", "failed") from None
        except Exception as e:
            log.exception("control: %s on engine %s failed", command, engine)
            raise self._error(f"{command} on engine {engine} failed: {type(e).__name__}: {e}", "failed") from None
        return dict(_jsonable(answer))

    # ------------------------------------------------------------------------------------------- one per command

    async def _set_tier(self, a: SetTierArgs) -> dict[str, Any]:
        self.ops.set_tier(a.call_id, a.tier)
        return {"call_id": a.call_id, "tier": a.tier, "call": self._call(a.call_id)}

    async def _set_tool_enabled(self, a: SetToolEnabledArgs) -> dict[str, Any]:
        restarted = self.ops.set_tool_enabled(a.call_id, a.exposed_name, a.enabled, a.apply)
        return {
            "call_id": a.call_id,
            "exposed_name": a.exposed_name,
            "enabled": a.enabled,
            "apply": a.apply,
            "restarted": restarted,
        }

    async def _end_call(self, a: EndCallArgs) -> dict[str, Any]:
        await self.ops.end_call(a.call_id, a.reason)
        return {"call_id": a.call_id, "ended": True, "reason": a.reason}

    async def _say_now(self, a: SteerArgs) -> dict[str, Any]:
        return {"call_id": a.call_id, "via": await self.ops.say_now(a.call_id, a.text)}

    async def _whisper(self, a: SteerArgs) -> dict[str, Any]:
        return {"call_id": a.call_id, "via": await self.ops.whisper(a.call_id, a.text)}

    async def _approve_tool(self, a: ApproveArgs) -> dict[str, Any]:
        self.ops.approve_tool(a.approval_id, a.by)
        return {"approval_id": a.approval_id, "approved": True, "by": a.by}

    async def _deny_tool(self, a: DenyArgs) -> dict[str, Any]:
        self.ops.deny_tool(a.approval_id, a.reason, a.by)
        return {"approval_id": a.approval_id, "approved": False, "by": a.by, "reason": a.reason}

    async def _transfer_call(self, a: TransferArgs) -> dict[str, Any]:
        result = await self.ops.transfer_call(a.call_id, a.destination, a.mode)
        return {"call_id": a.call_id, "destination": a.destination, **result}

    async def _drain(self, a: NoArgs) -> dict[str, Any]:
        return dict(self.ops.drain())

    async def _resume(self, a: NoArgs) -> dict[str, Any]:
        return dict(self.ops.resume())

    async def _calls_info(self, a: NoArgs) -> dict[str, Any]:
        return {"calls": [dataclasses.asdict(CallInfo.of(s)) for s in self.ops.live_sessions()]}

    async def _server_status(self, a: NoArgs) -> dict[str, Any]:
        return dict(self.ops.server_status())

    async def _tool_states(self, a: CallArgs) -> dict[str, Any]:
        return {"call_id": a.call_id, "tools": [dataclasses.asdict(t) for t in self.ops.tool_states(a.call_id)]}

    def _call(self, call_id: str | None) -> dict[str, Any] | None:
        session = self.ops.live_session(call_id) if call_id is not None else None
        return dataclasses.asdict(CallInfo.of(session)) if session is not None else None
