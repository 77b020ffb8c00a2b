"""Every event class's generated ``__init__`` and ``build`` (engine.events.fast_init): the same event as the dataclass
would make, of the class itself, still frozen, and still a dataclass to ``replace``, pickle and JSON."""

from __future__ import annotations

import dataclasses
import pickle
import typing
from typing import Any

import pytest

import engine.events as events_module
from engine.events import CallEnded, Event, ToolCompleted

EVENT_CLASSES = sorted(
    {c for c in vars(events_module).values() if isinstance(c, type) and issubclass(c, Event)}, key=lambda c: c.__name__
)


def _sample_value(annotation: Any) -> Any:
    text = str(annotation)
    if "bool" in text:
        return True
    if "int" in text:
        return 7
    if "float" in text:
        return 1.5
    if "dict" in text or "Mapping" in text:
        return {"k": "v"}
    if "tuple" in text:
        return ()
    if "list" in text or "Sequence" in text:
        return ["x"]
    return "x"


def _fields_of(cls: type[Any]) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: _sample_value(hints.get(f.name, str)) for f in dataclasses.fields(cls) if f.name != "ts"}


@pytest.mark.parametrize("cls", EVENT_CLASSES, ids=lambda c: c.__name__)
def test_build_and_the_class_make_the_same_frozen_event(cls: type[Any]) -> None:
    values = _fields_of(cls)
    made = cls(**values, ts=1.0)
    built = cls.build(**values, ts=1.0)
    assert type(made) is cls and type(built) is cls
    assert made == built
    assert {f.name: getattr(built, f.name) for f in dataclasses.fields(cls)} == {**values, "ts": 1.0}
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.ts = 2.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        del built.ts
    assert pickle.loads(pickle.dumps(built)) == built
    assert dataclasses.replace(built, ts=3.0).ts == 3.0 and type(dataclasses.replace(built, ts=3.0)) is cls
    assert built.to_dict()["type"] == cls.type


def test_defaults_and_factories_apply_and_a_missing_field_is_named() -> None:
    before = ToolCompleted.build(
        call_id="c",
        tool_call_id="t",
        exposed_name="e",
        server="s",
        tool="e",
        status="success",
        latency_ms=1,
        message="m",
    )
    assert before.data is None and before.cache_hit is False and before.ts > 0
    with pytest.raises(TypeError, match="reason"):
        CallEnded.build(call_id="c")
    with pytest.raises(TypeError):
        CallEnded.build("c", "r")  # type: ignore[call-arg]


def test_a_subclass_that_inherits_the_init_keeps_its_own_class() -> None:
    class Later(CallEnded):
        __slots__ = ()

    made = Later(call_id="c", reason="r")
    assert type(made) is Later and made.reason == "r"
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.reason = "x"  # type: ignore[misc]
