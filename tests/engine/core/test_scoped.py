"""``bound``: a context variable set for a block, and what it was before afterwards (also when the block fails),
the one way the engine's scoped flags and boxes (call legs, steering delivery, MCP passthrough boxes) are set."""

from __future__ import annotations

from contextvars import ContextVar

import pytest

from engine.core.scoped import bound
from engine.sessions.steering import is_steering, steering_delivery

FLAG: ContextVar[str] = ContextVar("test_flag", default="before")


def test_a_value_holds_inside_the_block_and_the_old_one_comes_back_after_a_failure() -> None:
    with pytest.raises(RuntimeError), bound(FLAG, "inside") as value:
        assert value == "inside" and FLAG.get() == "inside"
        raise RuntimeError("the block failed")
    assert FLAG.get() == "before"


def test_the_engines_scoped_flags_are_bound_the_same_way() -> None:
    with steering_delivery():
        assert is_steering()
    assert not is_steering()
