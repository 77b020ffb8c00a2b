"""A faster ``__init__`` for frozen, slotted dataclasses (the engine's events).

Why: the tool path builds two events per call when someone listens, and the ``__init__`` ``dataclass`` writes for a
frozen class looks ``object.__setattr__`` up once per field (a third of an event's cost). ``fast_frozen_init``
replaces it with one that stores each field through its slot descriptor: same keyword-only signature, defaults and
default factories; the class stays a frozen dataclass.
"""

from __future__ import annotations

import dataclasses
from typing import Any


def fast_frozen_init(cls: type[Any]) -> None:
    """Give a frozen event class an ``__init__`` that stores its fields through their slot descriptors.

    Why: the tool path builds two events per call when someone listens, and the ``__init__`` ``dataclass``
    writes for a frozen class looks ``object.__setattr__`` up once per field (a third of an event's cost).
    Same keyword-only signature, defaults and default factories; the class stays a frozen dataclass.
    """
    fields = dataclasses.fields(cls)
    env: dict[str, Any] = {"_MISSING": dataclasses.MISSING}
    params: list[str] = []
    body: list[str] = []
    for f in fields:
        env[f"_set_{f.name}"] = getattr(cls, f.name).__set__  # the slot's member descriptor
        if f.default is not dataclasses.MISSING:
            env[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            body.append(f"    if {f.name} is _MISSING:\n        {f.name} = _factory_{f.name}()")
        else:
            params.append(f.name)
        body.append(f"    _set_{f.name}(self, {f.name})")
    source = f"def __init__(self, *, {', '.join(params)}) -> None:\n" + "\n".join(body) + "\n"
    exec(source, env)  # the source is built above from the class's own field names, as dataclasses does
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init
