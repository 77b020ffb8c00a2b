"""requirements/test.lock covers pyproject.toml: every dependency (and test extra, and build requirement) is pinned
there, at a version its specifier allows, with hashes. A dependency added to pyproject.toml without `make lock`
fails here, before an install from the lock would leave it out."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[2]
LOCK = ROOT / "requirements" / "test.lock"


def locked() -> dict[str, list[tuple[Version, str]]]:
    """name -> [(version, its marker text)] (a universal lock may pin one package per Python version)."""
    pins: dict[str, list[tuple[Version, str]]] = {}
    entries = re.split(r"\n(?=\S)", LOCK.read_text(encoding="utf-8"))
    for entry in entries:
        m = re.match(r"([A-Za-z0-9_.\-]+)==([^\s;\\]+)\s*(?:;\s*([^\\\n]+))?", entry)
        if not m:
            continue
        assert "--hash=sha256:" in entry, f"{m.group(1)} is locked without a hash"
        pins.setdefault(canonicalize_name(m.group(1)), []).append((Version(m.group(2)), (m.group(3) or "").strip()))
    return pins


def wanted() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    reqs = [*project["project"]["dependencies"], *project["project"]["optional-dependencies"]["test"]]
    reqs += project["build-system"]["requires"]
    return [Requirement(r) for r in reqs]


def test_every_dependency_is_locked_at_an_allowed_version() -> None:
    pins = locked()
    problems = []
    for req in wanted():
        if req.marker is not None and not req.marker.evaluate():
            continue
        versions = pins.get(canonicalize_name(req.name))
        if not versions:
            problems.append(f"{req}: not in {LOCK.name}")
        elif not any(req.specifier.contains(v, prereleases=True) for v, _ in versions):
            problems.append(f"{req}: locked at {', '.join(str(v) for v, _ in versions)}")
    assert problems == [], "run `make lock` and commit requirements/test.lock"


def test_the_lock_is_read() -> None:
    # guards the parser above: a format change must not make the check vacuous
    pins = locked()
    assert len(pins) > 50 and "pytest" in pins and "setuptools" in pins
