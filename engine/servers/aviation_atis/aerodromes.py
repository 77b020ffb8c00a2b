"""Per-aerodrome extras for the ATIS (name, runway in use, frequency, advisories, availability).

Why it exists: a METAR does not say which runway is in use or what the aerodrome is called, and an
operator may switch an aerodrome's ATIS off. These facts live in a YAML file the operator edits while the
server runs; it is re-read when its modification time changes. A broken edit keeps the last good version
(and is logged); a broken file at startup is refused.

Format::

    aerodromes:
      LSZH:
        name: Zurich
        runway_in_use: "14"
        frequency: "128.525"
        advisories: ["Bird activity in the vicinity of the aerodrome."]
        explicit_not_available: false
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from engine.bounds.yaml_loader import YAMLError
from engine.bounds.yaml_loader import load_file as load_yaml_file

log = logging.getLogger(__name__)
_KEYS = {"name", "runway_in_use", "frequency", "advisories", "explicit_not_available"}


class AerodromeFileError(ValueError):
    """The aerodromes file is unreadable or malformed; the message names the place."""


def _validate(path: Path, data: Any) -> dict[str, dict[str, Any]]:
    if data is None:
        return {}
    if not isinstance(data, dict) or not isinstance(data.get("aerodromes", {}), dict):
        raise AerodromeFileError(f"{path}: expected a top-level 'aerodromes' mapping")
    result: dict[str, dict[str, Any]] = {}
    for icao, body in (data.get("aerodromes") or {}).items():
        code = str(icao).upper()
        if not re.fullmatch(r"[A-Z]{4}", code):
            raise AerodromeFileError(f"{path}: {icao!r} is not a 4-letter ICAO code")
        if not isinstance(body, dict):
            raise AerodromeFileError(f"{path}: aerodromes.{code} must be a mapping")
        unknown = set(body) - _KEYS
        if unknown:
            raise AerodromeFileError(
                f"{path}: aerodromes.{code} has unknown keys {sorted(unknown)} (allowed: {sorted(_KEYS)})"
            )
        advisories = body.get("advisories", [])
        if not isinstance(advisories, list) or not all(isinstance(a, str) for a in advisories):
            raise AerodromeFileError(f"{path}: aerodromes.{code}.advisories must be a list of strings")
        if not isinstance(body.get("explicit_not_available", False), bool):
            raise AerodromeFileError(f"{path}: aerodromes.{code}.explicit_not_available must be true or false")
        extras = {key: value for key, value in body.items() if value is not None}
        for key in ("name", "runway_in_use", "frequency"):
            if key in extras:
                extras[key] = str(extras[key])
        result[code] = extras
    return result


class Aerodromes:
    """The extras file, re-read on change."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._mtime: float | None = None
        self._data: dict[str, dict[str, Any]] = {}
        if path is not None:
            self._data = self._read()

    def _read(self) -> dict[str, dict[str, Any]]:
        assert self.path is not None
        try:
            self._mtime = self.path.stat().st_mtime
            raw = load_yaml_file(self.path)
        except OSError as exc:
            reason = exc.strerror or exc
            raise AerodromeFileError(f"cannot read aerodromes file {self.path}: {reason}") from exc
        except YAMLError as exc:
            raise AerodromeFileError(f"aerodromes file {self.path} is not valid YAML: {exc}") from exc
        return _validate(self.path, raw)

    def get(self, icao: str) -> dict[str, Any]:
        if self.path is not None:
            try:
                if self.path.stat().st_mtime != self._mtime:
                    self._data = self._read()
            except (OSError, AerodromeFileError) as exc:
                log.warning("keeping the previous aerodrome extras: %s", exc)
        return dict(self._data.get(icao, {}))
