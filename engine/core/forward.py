"""``Forward``: a facade's method that is a part's method, declared in one line, signature and docstring kept.

Why it exists: the public API is one object (``engine.app.Engine``) whose commands live in named parts (steering,
approvals, the operator's desk, the recordings …). Writing each forward by hand repeats every signature and
docstring; a class assembled from mixins instead hands every part the whole object. ``Forward("steering",
Steering.say_now)`` gives ``engine.say_now`` as the part's bound method: same signature, same docstring, and
type-checked against the part's class.
"""

from __future__ import annotations

from collections.abc import Callable
from types import MethodType
from typing import Any, Concatenate, Generic, ParamSpec, TypeVar, cast, overload

P = ParamSpec("P")
R = TypeVar("R")
Part = TypeVar("Part")


class Forward(Generic[Part, P, R]):
    """``name = Forward("part", PartClass.method)`` in a class body: ``obj.name`` is ``obj.part.method``."""

    def __init__(self, part: str, method: Callable[Concatenate[Part, P], R]) -> None:
        if not part.isidentifier():
            raise ValueError(f"Forward: the part's attribute name must be an identifier, not {part!r}")
        self.part = part
        self.method = method
        self.__doc__ = method.__doc__

    def __set_name__(self, owner: type, name: str) -> None:
        if name != self.method.__name__:
            raise TypeError(f"{owner.__name__}.{name} forwards to {self.method.__qualname__}: use the same name")

    @overload
    def __get__(self, obj: None, owner: type) -> Forward[Part, P, R]: ...

    @overload
    def __get__(self, obj: object, owner: type) -> Callable[P, R]: ...

    def __get__(self, obj: object | None, owner: type) -> Any:
        if obj is None:
            return self
        return cast("Callable[P, R]", MethodType(self.method, getattr(obj, self.part)))
