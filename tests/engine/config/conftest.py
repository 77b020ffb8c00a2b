"""Shared fixtures for the config tests: an in-memory keyring and the fixture config paths."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import keyring
import keyring.backends.fail
import pytest

from tests.fixtures.memory_keyring import MemoryKeyring

CONFIGS = Path(__file__).resolve().parents[2] / "fixtures" / "configs"
CANARY = "sk-CANARY-1234567890-9f3a"


@pytest.fixture
def configs_dir() -> Path:
    return CONFIGS


@pytest.fixture
def canary() -> str:
    """The secret that must never show up anywhere (it is the openai_key of ``full_keyring``)."""
    return CANARY


@pytest.fixture
def memory_keyring() -> Iterator[MemoryKeyring]:
    previous = keyring.get_keyring()
    backend = MemoryKeyring()
    keyring.set_keyring(backend)
    try:
        yield backend
    finally:
        keyring.set_keyring(previous)


@pytest.fixture
def no_keyring() -> Iterator[None]:
    previous = keyring.get_keyring()
    keyring.set_keyring(keyring.backends.fail.Keyring())
    try:
        yield
    finally:
        keyring.set_keyring(previous)


FULL_SECRETS = {
    "http_token": "http-token-value-1",
    "mcp_token": "mcp-token-value-22",
    "openai_key": CANARY,
    "weather_token": "weather-token-333",
    "smtp_password": "smtp-password-4444",
}


@pytest.fixture
def full_keyring(memory_keyring: MemoryKeyring) -> MemoryKeyring:
    for name, value in FULL_SECRETS.items():
        memory_keyring.set_password("ava-console", name, value)
    return memory_keyring
