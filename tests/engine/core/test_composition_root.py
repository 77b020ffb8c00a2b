"""The composition root (issue 35 item 1): ``Engine`` is one object built from named parts, not assembled from mixins.

Each part of the operator's desk is built from what it uses (never the engine), the facade forwards to it with the
part's own signature and docstring, and the root reaches its parts by name: no ``getattr`` back door, no search of
the component list for a class.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from engine.app import Engine
from engine.config.models import Settings
from engine.core.forward import Forward
from engine.operator.approvals import ApprovalCommands
from engine.operator.call_switches import CallSwitches
from engine.operator.desk import OperatorDesk
from engine.operator.elicitation import ElicitationCommands
from engine.operator.servers import ServerDesk
from engine.operator.steering import Steering
from engine.recorder.desk import RecordingDesk

ROOT = Path(__file__).resolve().parents[3]
PARTS = [Steering, ApprovalCommands, ElicitationCommands, OperatorDesk, RecordingDesk, CallSwitches, ServerDesk]


def test_the_engine_is_not_assembled_from_mixins() -> None:
    assert Engine.__mro__ == (Engine, object)


@pytest.mark.parametrize("part", PARTS)
def test_each_part_is_built_from_what_it_uses_not_the_engine(part: type) -> None:
    params = inspect.signature(part).parameters
    assert params, f"{part.__name__} is handed nothing: it must be a mixin reading the engine's attributes"
    for name, p in params.items():
        assert name not in ("engine", "host"), f"{part.__name__}({name}) is handed the whole engine"
        assert "Engine" not in str(p.annotation), f"{part.__name__}({name}: {p.annotation})"


def test_the_facade_forwards_with_the_parts_signature_and_docstring() -> None:
    engine = Engine(Settings.model_validate({"engine": {"http": {"enabled": False}}}))
    parts = [("say_now", engine.steering), ("approve_tool", engine.approvals), ("drain", engine.operator)]
    parts += [("set_tier", engine.switches), ("server_status", engine.servers), ("export_call", engine.recording)]
    for name, part in parts:
        forwarded, own = getattr(engine, name), getattr(part, name)
        assert forwarded == own and forwarded.__doc__ == own.__doc__
        assert inspect.signature(forwarded) == inspect.signature(own)
    assert engine.pending_approvals() == []
    assert engine.drain()["draining"] is True and engine.resume()["draining"] is False


def test_a_forward_must_keep_the_parts_method_name() -> None:
    with pytest.raises(RuntimeError) as raised:  # Python wraps what __set_name__ raises

        class Facade:
            speak = Forward("steering", Steering.say_now)

    assert "Facade.speak forwards to Steering.say_now: use the same name" in str(raised.value.__cause__)


@pytest.mark.parametrize("module", ["engine/app.py", "engine/realtime/driver.py", "engine/cli/budget_commands.py"])
def test_no_getattr_back_door_and_no_component_search(module: str) -> None:
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    calls = [n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)]
    assert "getattr" not in calls, f"{module} reaches a part through getattr: declare it in a Protocol instead"
    assert "isinstance" not in calls, f"{module} finds a part by searching for its class: name it instead"


@pytest.mark.parametrize("module", ["engine/voice/pipeline.py", "engine/calls/turn_timing.py"])
def test_a_voice_call_reads_the_engine_through_its_protocol(module: str) -> None:
    """``getattr`` on the engine a call was handed is a back door past ``VoiceHost``: declare what it uses."""
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    probes = [
        ast.unparse(n)
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "getattr"
        if ast.unparse(n.args[0]) in ("engine", "self.engine", "host")
    ]
    assert probes == [], f"{module} looks the engine up at run time: {probes}"
