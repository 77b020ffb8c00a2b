"""Can this domain receive e-mail? MX records, else an address (RFC 5321 §5.1's implicit MX), asked of DNS quickly.

Why it exists: a caller's address that parsed fine can still name a domain that does not exist ("gmial dot com");
the agent should hear that while the caller is still on the line. A slow or broken resolver is not the caller's
fault, so a timeout or SERVFAIL answers ``unknown`` (queue the mail, let SMTP decide), never ``invalid``. Only a
definite answer — NXDOMAIN, a domain with neither MX nor A/AAAA records, or a null MX (RFC 7505) — is ``invalid``.

``nameservers`` and ``port`` select the resolvers (tests run a DNS server on 127.0.0.1); without them the system's
resolver configuration is used. The whole check, MX then A then AAAA, shares one ``timeout_s`` budget.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import dns.asyncresolver
import dns.exception
import dns.name
import dns.rdata
import dns.resolver
from dns.rdtypes.ANY.MX import MX

DomainStatus = Literal["valid", "invalid", "unknown"]


@dataclass(frozen=True, slots=True)
class DomainCheck:
    """The verdict on ``domain``: ``status``, a sentence saying why, and the mail hosts found (best first)."""

    domain: str
    status: DomainStatus
    reason: str
    hosts: tuple[str, ...] = ()

    @property
    def usable(self) -> bool:
        """Worth queueing mail for: valid, or unknown because DNS could not answer now."""
        return self.status != "invalid"


class _Unknown(Exception):
    """DNS gave no definite answer (timeout, SERVFAIL, refused): the reason is the message."""


async def check_domain(
    domain: str,
    *,
    nameservers: Sequence[str] | None = None,
    port: int = 53,
    timeout_s: float = 2.0,
) -> DomainCheck:
    """Look up ``domain``'s MX records, falling back to A then AAAA; never raises for DNS trouble."""
    if timeout_s <= 0:
        raise ValueError(f"check_domain: timeout_s must be > 0, not {timeout_s}")
    if nameservers is not None and not nameservers:
        raise ValueError("check_domain: nameservers is empty (pass None for the system's resolvers)")
    domain = domain.strip().rstrip(".")
    try:
        name = dns.name.from_text(domain)
    except (dns.exception.DNSException, UnicodeError, ValueError) as e:
        return DomainCheck(domain, "invalid", f"{domain!r} is not a valid domain name ({e})")
    if not domain or len(name.labels) < 3:  # labels end with the root: "com" alone is ("com", "")
        return DomainCheck(domain, "invalid", f"{domain!r} is not a full domain name")
    try:
        resolver = dns.asyncresolver.Resolver(configure=nameservers is None)
    except (dns.exception.DNSException, OSError) as e:  # no /etc/resolv.conf, no nameserver in it
        return DomainCheck(domain, "unknown", f"no DNS resolver is configured ({e})")
    if nameservers is not None:
        resolver.nameservers = list(nameservers)
    resolver.port = port
    resolver.retry_servfail = False
    deadline = time.monotonic() + timeout_s
    try:
        mx = await _lookup(resolver, name, "MX", deadline)
        if mx is None:
            return DomainCheck(domain, "invalid", f"the domain {domain} does not exist")
        if mx:
            real = sorted((r.preference, r.exchange) for r in mx if isinstance(r, MX) and r.exchange != dns.name.root)
            hosts = tuple(exchange.to_text(omit_final_dot=True) for _, exchange in real)
            if not hosts:  # RFC 7505 null MX: "0 ."
                return DomainCheck(domain, "invalid", f"the domain {domain} accepts no email (null MX)")
            return DomainCheck(domain, "valid", f"{domain} has mail servers (MX)", hosts)
        for rdtype in ("A", "AAAA"):
            if await _lookup(resolver, name, rdtype, deadline):
                return DomainCheck(domain, "valid", f"{domain} has no MX but an address ({rdtype})", (domain,))
    except _Unknown as e:
        return DomainCheck(domain, "unknown", f"DNS did not answer for {domain}: {e}")
    return DomainCheck(domain, "invalid", f"the domain {domain} has no mail server and no address")


async def _lookup(
    resolver: dns.asyncresolver.Resolver, name: dns.name.Name, rdtype: str, deadline: float
) -> list[dns.rdata.Rdata] | None:
    """The records of ``rdtype`` (empty when there are none), None for NXDOMAIN; raises _Unknown otherwise."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise _Unknown("timed out")
    resolver.lifetime = left
    resolver.timeout = left
    try:
        answer = await resolver.resolve(name, rdtype, search=False, raise_on_no_answer=False)
    except dns.resolver.NXDOMAIN:
        return None
    except dns.resolver.NoAnswer:
        return []
    except dns.resolver.LifetimeTimeout:
        raise _Unknown("timed out") from None
    except dns.resolver.NoNameservers as e:
        raise _Unknown(f"no server could answer ({_first_error(e)})") from None
    except (dns.exception.DNSException, OSError) as e:
        raise _Unknown(str(e) or type(e).__name__) from None
    return list(answer)


def _first_error(e: dns.resolver.NoNameservers) -> str:
    errors = e.kwargs.get("errors") or []
    return str(errors[0][3]) if errors and len(errors[0]) > 3 else "SERVFAIL"
