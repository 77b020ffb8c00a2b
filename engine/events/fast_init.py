"""A faster ``__init__`` (and a faster ``build``) for frozen, slotted dataclasses: the engine's events.

Why: the tool path builds two events per call when someone listens, and a frozen class can only store a field
through a call (``object.__setattr__``, or the slot's descriptor), which packs its arguments into a tuple every
time: 13 of those were most of a ``ToolCompleted``'s cost. Here each class gets a private twin: a subclass with
no slots of its own and the ordinary ``__setattr__``, so an instance of the twin takes plain attribute stores; the
new instance is the twin's while its fields are stored and the class's own after (``__class__`` assignment, legal
between classes of one layout). So the class stays a frozen dataclass to everyone who sees an instance.

``build`` is the same constructor as a function: calling a class with keyword arguments packs them into a dict
for ``__init__`` (CPython 3.11 has no fast call for classes), which a hot path can skip with ``Cls.build(...)``.
Both take the class's keyword-only signature, defaults and default factories.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def fast_frozen_init(cls: type[Any]) -> None:
    """Give a frozen slotted dataclass an ``__init__`` and a static ``build`` that store its fields through a twin
    class (see the module docstring)."""
    fields = dataclasses.fields(cls)
    twin = type(
        f"{cls.__name__}Building",
        (cls,),
        {"__slots__": (), "__setattr__": object.__setattr__, "__delattr__": object.__delattr__},
    )
    twin.__qualname__ = f"{cls.__qualname__}.Building"
    twin.__module__ = cls.__module__
    env: dict[str, Any] = {
        "_MISSING": dataclasses.MISSING,
        "_cls": cls,
        "_twin": twin,
        "_new": object.__new__,
        "_set": object.__setattr__,
    }
    params: list[str] = []
    body: list[str] = []
    slow: list[str] = []  # for an instance of a subclass that inherits this __init__: no twin of its class here
    for f in fields:
        if f.default is not dataclasses.MISSING:
            env[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            body.append(f"    if {f.name} is _MISSING:\n        {f.name} = _factory_{f.name}()")
        else:
            params.append(f.name)
        body.append(f"    self.{f.name} = {f.name}")
        slow.append(f"        _set(self, {f.name!r}, {f.name})")
    signature = ", ".join(params)
    stores = "\n".join(body)
    source = (
        f"def __init__(self, *, {signature}) -> None:\n"
        f"    if self.__class__ is not _cls:\n" + "\n".join(slow) + "\n        return\n"
        f"    _set(self, '__class__', _twin)\n{stores}\n    self.__class__ = _cls\n\n"
        f"def build(*, {signature}):\n"
        f"    self = _new(_twin)\n{stores}\n    self.__class__ = _cls\n    return self\n"
    )
    exec(source, env)  # the source is built above from the class's own field names, as dataclasses does
    init, build = env["__init__"], env["build"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    build.__qualname__ = f"{cls.__qualname__}.build"
    build.__doc__ = f"A new {cls.__name__}: the same as calling the class, without packing the keywords into a dict."
    cls.__init__ = init
    cls.build = staticmethod(build)
