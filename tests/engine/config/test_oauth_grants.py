"""``auth.oauth.grant``: every grant without a person is checked at load, and each bad combination is an error naming
the server and the key (the file's line too), through ``load_settings`` and the installed ``ava-engine check``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from engine.config import ConfigError, load_settings

ENTRY_POINT = Path(sys.executable).parent / "ava-engine"
ISSUER = "issuer: http://127.0.0.1:2"


def _ec_pem() -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()


def _config(tmp_path: Path, oauth: str) -> Path:
    body = "".join(f"          {line}\n" for line in oauth.strip().splitlines())
    config = tmp_path / "config.yaml"
    config.write_text(
        "mcp:\n  servers:\n    prot:\n      transport: http\n      url: http://127.0.0.1:1/mcp\n"
        f"      auth:\n        oauth:\n{body}"
    )
    return config


@pytest.mark.parametrize(
    "oauth",
    [
        f"grant: client_credentials\nclient_id: c\nclient_secret: s\n{ISSUER}",
        f"grant: client_credentials\nclient_id: c\nprivate_key_file: /keys/c.pem\nsigning_algorithm: ES256\n{ISSUER}",
        f"grant: jwt_bearer\nassertion_file: /var/run/secrets/tokens/mcp\n{ISSUER}",
        f"grant: jwt_bearer\nclient_id: w\nassertion: abc.def.ghi\n{ISSUER}",
        "grant: enterprise\nclient_id: c\nclient_secret: s\n"
        f"{ISSUER}\nidp:\n  token_endpoint: https://idp.example/token\n  id_token_file: /run/sso/id_token",
    ],
)
def test_each_grant_without_a_person_loads(tmp_path: Path, oauth: str) -> None:
    cfg = load_settings(_config(tmp_path, oauth)).mcp.servers["prot"]
    assert cfg.auth is not None and cfg.auth.oauth.machine


def test_a_private_key_is_checked_against_its_algorithm(tmp_path: Path) -> None:
    ok = f"grant: client_credentials\nclient_id: c\nprivate_key: '${{KEY}}'\nsigning_algorithm: ES256\n{ISSUER}"
    import os

    os.environ["KEY"] = _ec_pem()
    try:
        assert load_settings(_config(tmp_path, ok)).mcp.servers["prot"].auth is not None
        with pytest.raises(ConfigError) as e:
            load_settings(_config(tmp_path, ok.replace("ES256", "RS256")))
    finally:
        del os.environ["KEY"]
    text = str(e.value)
    assert "mcp.servers.prot.auth.oauth.private_key" in text
    assert "is an EC P-256 key; signing_algorithm RS256 needs an RSA key" in text
    assert "BEGIN" not in text  # never the key itself


@pytest.mark.parametrize(
    ("oauth", "key", "message"),
    [
        ("grant: password", "auth.oauth.grant", "client_credentials"),
        ("grant: client_credentials\nclient_id: c\nclient_secret: s", "auth.oauth.issuer", "issuer URL"),
        (f"grant: client_credentials\nclient_secret: s\n{ISSUER}", "auth.oauth.client_secret", "needs the client_id"),
        (f"grant: client_credentials\nclient_id: c\n{ISSUER}", "auth.oauth.client_secret", "exactly one of"),
        (
            f"grant: client_credentials\nclient_id: c\nclient_secret: s\nprivate_key_file: /k.pem\n{ISSUER}",
            "auth.oauth.private_key_file",
            "exactly one of",
        ),
        (
            f"grant: client_credentials\nclient_id: c\nprivate_key_file: keys/c.pem\n{ISSUER}",
            "auth.oauth.private_key_file",
            "absolute path",
        ),
        (
            f"grant: client_credentials\nclient_id: c\nprivate_key_file: /c.pem\nsigning_algorithm: HS256\n{ISSUER}",
            "auth.oauth.signing_algorithm",
            "is not one of",
        ),
        (f"grant: jwt_bearer\n{ISSUER}", "auth.oauth.assertion", "exactly one of assertion and assertion_file"),
        ("grant: jwt_bearer\nassertion: a.b.c\nissuer: ftp://as", "auth.oauth.issuer", "not an http(s) URL"),
        (f"client_id: c\nclient_secret: s\n{ISSUER}", "auth.oauth.issuer", "only client_credentials"),
        ("assertion_file: /t", "auth.oauth.assertion_file", "only grant jwt_bearer"),
        (f"grant: enterprise\nclient_id: c\n{ISSUER}", "auth.oauth.client_secret", "needs client_id and client_secret"),
        (f"grant: enterprise\nclient_id: c\nclient_secret: s\n{ISSUER}", "auth.oauth.idp", "needs idp"),
        (
            f"grant: enterprise\nclient_id: c\nclient_secret: s\n{ISSUER}\nidp:\n  token_endpoint: https://i/t",
            "auth.oauth.idp.id_token",
            "exactly one of id_token and id_token_file",
        ),
        ("dpop: sometimes", "auth.oauth.dpop", "auto"),
        (
            f"grant: enterprise\nclient_id: c\nclient_secret: s\n{ISSUER}\ndpop: true\n"
            "idp: {token_endpoint: 'https://i/t', id_token_file: /t}",
            "auth.oauth.dpop",
            "bearer tokens only",
        ),
        (
            f"grant: client_credentials\nclient_id: c\nclient_secret: s\n{ISSUER}\n"
            "client_metadata_url: https://e.example/c.json",
            "auth.oauth.client_metadata_url",
            "either client_id",
        ),
    ],
)
def test_a_bad_grant_config_names_the_server_and_key(tmp_path: Path, oauth: str, key: str, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        load_settings(_config(tmp_path, oauth))
    assert f"mcp.servers.prot.{key}" in str(e.value) and message in str(e.value), str(e.value)


def test_ava_engine_check_names_the_server_and_key(tmp_path: Path) -> None:
    config = _config(tmp_path, "grant: client_credentials\nclient_id: c\nclient_secret: s")
    done = subprocess.run(
        [str(ENTRY_POINT), "--config", str(config), "check"], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2
    assert f"{config}:7: mcp.servers.prot.auth.oauth.issuer: grant client_credentials needs" in done.stderr
