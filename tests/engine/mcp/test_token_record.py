"""A stored OAuth record whose tokens or client registration no longer parse (another SDK version's shape, a hand
edit) reads as nothing stored (a sign-in again), never as an error; a good one reads back as it was stored."""

from __future__ import annotations

import json
from collections.abc import Iterator

import keyring
import pytest

from engine.mcp.token_store import SERVICE, KeyringTokenStorage
from tests.fixtures.memory_keyring import MemoryKeyring

URL = "https://example.test/mcp"


@pytest.fixture
def store() -> Iterator[KeyringTokenStorage]:
    previous = keyring.get_keyring()
    keyring.set_keyring(MemoryKeyring())
    try:
        yield KeyringTokenStorage("srv", URL)
    finally:
        keyring.set_keyring(previous)


def _stored(record: dict[str, object]) -> None:
    keyring.set_password(SERVICE, "srv", json.dumps({"url": URL, **record}))


def test_tokens_and_client_that_no_longer_parse_read_as_nothing(store: KeyringTokenStorage) -> None:
    _stored({"tokens": {"access_token": ["not", "text"]}, "client": {"redirect_uris": 7}})
    assert store.tokens() is None
    assert store.client_info() is None


def test_good_tokens_and_client_read_back(store: KeyringTokenStorage) -> None:
    _stored({"tokens": {"access_token": "at-1", "token_type": "Bearer"}, "client": {"client_id": "c-1"}})
    tokens, client = store.tokens(), store.client_info()
    assert tokens is not None and tokens.access_token == "at-1"
    assert client is not None and client.client_id == "c-1"
