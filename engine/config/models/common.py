"""What every config section model shares: the strict base class, the field-blaming error and the tier names.

Kept apart so each section module depends only on this one, never on a sibling section; ``validation``
recognises ``FieldError`` when it turns pydantic errors into file:line:key-path messages.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict

TierName = Literal["fast", "standard", "deep"]
TierChoice = Literal["fast", "standard", "deep", "auto"]


class FieldError(ValueError):
    """A model-level check that blames one field (or one of several candidates).

    Raised from model validators; pydantic keeps the exception in the error's ``ctx["error"]``, and the loader
    appends ``loc`` to the model's location so the message points at the offending key's own line.
    ``candidates`` are alternative locs: the loader picks the first one that is present in the file (e.g. the
    tier the user actually wrote). ``str()`` includes the relative path, for readers that see the raw
    pydantic error.
    """

    def __init__(self, loc: str | tuple[str | int, ...], message: str, *candidates: tuple[str | int, ...]) -> None:
        self.loc: tuple[str | int, ...] = (loc,) if isinstance(loc, str) else tuple(loc)
        self.candidates: tuple[tuple[str | int, ...], ...] = (self.loc, *candidates)
        self.message = message
        super().__init__(f"{'.'.join(str(p) for p in self.loc)}: {message}")


class Strict(BaseModel):
    """Base for every config section: unknown keys are errors."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True)

    def require_below(self, low: str, high: str, message: str) -> None:
        """A model-level order check: ``low`` < ``high``, else a ``FieldError`` blaming ``high`` (or ``low`` when
        only that one is written in the file)."""
        if not getattr(self, low) < getattr(self, high):
            raise FieldError(high, message, (low,))
