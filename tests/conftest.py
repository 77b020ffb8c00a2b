"""Shared test fixtures: the repo root, a demo config, an in-memory keyring, and a leftover-process check."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Fixtures shared across folders: ``pulse`` (a private PulseAudio daemon with a null sink).
pytest_plugins = ["tests.fixtures.pulse"]


@pytest.fixture
def repo_root() -> Path:
    return ROOT


@pytest.fixture
def demo_config_path() -> Path:
    return ROOT / "config" / "default.yaml"


@pytest.fixture(autouse=True)
def _isolated_user_dirs(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Never touch the developer's real config/data dirs from a test."""
    home = tmp_path_factory.mktemp("xdg")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(home / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / "cache"))
    yield


def python() -> str:
    return sys.executable


def children_of(pid: int) -> list[int]:
    """Live child processes of ``pid`` (from /proc), for no-orphan checks."""
    out: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(entry))
    return out
