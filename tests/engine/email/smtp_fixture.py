"""A real SMTP server on loopback for the e-mail tests: aiosmtpd with STARTTLS (a self-signed certificate made with
``cryptography``) and AUTH, keeping every message it accepted — and as strict as real servers are.

Strict: SMTPUTF8 is offered only when ``smtputf8`` is true, and a non-ASCII address is refused (553) unless the
transaction asked for SMTPUTF8 on MAIL (aiosmtpd itself answers 500 to non-ASCII bytes when it is off). The handler
can refuse single recipients at RCPT (``refuse``: address -> reply), answer a storm of 4xx to MAIL (``storm``
transactions, the server also hangs up after each, as a busy server does with 421), answer DATA with a given code
(``reply``: a 451 to test retries, a 550 for a permanent refusal), take a message and drop the connection without
answering (``drop_after_data``: the message may well be delivered, the client cannot know), or take it and hold the
answer until ``release`` is set (``hold``; ``holding`` says a message is waiting). ``stop`` and ``start`` on the same
port simulate a server that is down and comes back.
"""

from __future__ import annotations

import asyncio
import datetime
import ipaddress
import socket
import ssl
import threading
from dataclasses import dataclass, field
from email import message_from_bytes, policy
from email.message import EmailMessage
from pathlib import Path
from typing import Any

from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

USER = "ava"
PASSWORD = "s3cret-pass-word"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def self_signed(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1/localhost and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "smtp-cert.pem", folder / "smtp-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    return cert_path, key_path


@dataclass
class Received:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage

    def part(self, subtype: str) -> str:
        body = self.message.get_body(preferencelist=(subtype,))
        assert body is not None, f"no text/{subtype} part"
        return str(body.get_content())


@dataclass
class Handler:
    received: list[Received] = field(default_factory=list)
    #: Answer DATA with this instead of accepting ("451 4.3.0 try later", "550 5.1.1 no such user").
    reply: str | None = None
    #: RCPT replies per address (lower case): "550 5.1.1 <x@example.com>: no such user", "452 4.2.2 mailbox full".
    refuse: dict[str, str] = field(default_factory=dict)
    #: This many next transactions get ``storm_reply`` to MAIL, and the connection is closed after it.
    storm: int = 0
    storm_reply: str = "421 4.3.2 system busy, closing the connection"
    #: Take the message, then close the connection without answering DATA.
    drop_after_data: bool = False
    #: Take the message, set ``holding``, and answer only once ``release`` is set.
    hold: bool = False
    holding: threading.Event = field(default_factory=threading.Event)
    release: threading.Event = field(default_factory=threading.Event)
    #: Every RCPT the server answered: (address, reply).
    rcpts: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    accepted: threading.Event = field(default_factory=threading.Event)

    async def handle_MAIL(self, server: Any, session: Any, envelope: Any, address: str, options: list[str]) -> str:
        if self.storm > 0:
            self.storm -= 1
            asyncio.get_running_loop().call_soon(server.transport.close)
            return self.storm_reply
        if not address.isascii() and not envelope.smtp_utf8:
            return "553 5.6.7 a non-ASCII address needs SMTPUTF8"
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 2.1.0 OK"

    async def handle_RCPT(self, server: Any, session: Any, envelope: Any, address: str, options: list[str]) -> str:
        answer = self.refuse.get(address.lower())
        if answer is None and not address.isascii() and not envelope.smtp_utf8:
            answer = "553 5.6.7 a non-ASCII address needs SMTPUTF8"
        if answer is None:
            envelope.rcpt_tos.append(address)
            answer = "250 2.1.5 OK"
        with self.lock:
            self.rcpts.append((address, answer))
        return answer

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        if self.reply is not None:
            return self.reply
        msg = message_from_bytes(envelope.original_content or envelope.content, policy=policy.default)
        assert isinstance(msg, EmailMessage)
        with self.lock:
            self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), msg))
        self.accepted.set()
        if self.drop_after_data:
            server.transport.close()
        if self.hold:
            self.holding.set()
            await asyncio.get_running_loop().run_in_executor(None, self.release.wait)
        return "250 2.0.0 OK"


def _authenticate(server: Any, session: Any, envelope: Any, mechanism: str, auth_data: Any) -> AuthResult:
    ok = (
        isinstance(auth_data, LoginPassword)
        and auth_data.login == USER.encode()
        and auth_data.password == PASSWORD.encode()
    )
    return AuthResult(success=ok, handled=False)


class SmtpServer:
    """aiosmtpd on 127.0.0.1: STARTTLS required before AUTH, AUTH required before MAIL."""

    def __init__(self, folder: Path, port: int | None = None, *, smtputf8: bool = False) -> None:
        self.cert, key = self_signed(folder)
        self.tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.tls.load_cert_chain(self.cert, key)
        self.port = port or free_port()
        self.smtputf8 = smtputf8
        self.handler = Handler()
        self._controller: Controller | None = None

    @property
    def received(self) -> list[Received]:
        with self.handler.lock:
            return list(self.handler.received)

    def start(self) -> None:
        self._controller = Controller(
            self.handler,
            hostname="127.0.0.1",
            port=self.port,
            tls_context=self.tls,
            require_starttls=True,
            authenticator=_authenticate,
            auth_required=True,
            auth_require_tls=True,
            ready_timeout=10,
            enable_SMTPUTF8=self.smtputf8,
        )
        self._controller.start()

    def stop(self) -> None:
        self.handler.release.set()  # a held answer must not keep the server's thread from stopping
        if self._controller is not None:
            self._controller.stop()
            self._controller = None

    def email_config(self, **over: Any) -> dict[str, Any]:
        """``tools.email`` for this server (STARTTLS, AUTH, its certificate as the CA)."""
        cfg: dict[str, Any] = {
            "enabled": True,
            "smtp_host": "127.0.0.1",
            "smtp_port": self.port,
            "starttls": True,
            "tls_ca_file": str(self.cert),
            "username": USER,
            "password": PASSWORD,
            "from_address": "ava@example.com",
            "admin_address": "admin@example.com",
            "check_domains": False,
            "timeout_s": 5,
            "retry_first_s": 0.05,
            "retry_max_s": 0.2,
        }
        cfg.update(over)
        return cfg


def main() -> None:
    """``python smtp_fixture.py FOLDER PORT``: the server in a process of its own (benchmarks: no shared GIL)."""
    import sys
    import time

    server = SmtpServer(Path(sys.argv[1]), int(sys.argv[2]))
    server.start()
    print("ready", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
