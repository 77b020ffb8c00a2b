"""The one look-up every private name goes through: a changed dependency fails loudly, naming what changed."""

from __future__ import annotations

import inspect
from importlib import metadata
from typing import Any

__all__ = ["CompatError", "private"]


class CompatError(RuntimeError):
    """A dependency no longer has a private name the project relies on, or its parameters changed."""


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "(version unknown)"


def private(owner: Any, name: str, dist: str, params: tuple[str, ...] | None = None) -> Any:
    """``owner.name``, or a ``CompatError`` when it is gone or its first parameters are no longer ``params``."""
    where = f"{getattr(owner, '__name__', type(owner).__name__)}.{name}"
    try:
        found = getattr(owner, name)
    except AttributeError:
        raise CompatError(
            f"{dist} {_version(dist)} has no {where}: the project relies on it (see engine/_compat, console/_compat.py)"
        ) from None
    if params is not None:
        try:
            actual = tuple(inspect.signature(found).parameters)
        except (TypeError, ValueError):
            actual = ()
        if actual[: len(params)] != params:
            raise CompatError(
                f"{dist} {_version(dist)}: {where} now takes {actual}, the project relies on {params} "
                "(see engine/_compat, console/_compat.py)"
            )
    return found
