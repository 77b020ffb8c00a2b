"""check_domain against a real DNS server on 127.0.0.1: MX, only A/AAAA (implicit MX), nothing, null MX, and DNS
trouble (no answer at all, SERVFAIL, nobody listening) that must come out ``unknown``, never ``invalid``."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator

import pytest

from engine.email.domain import DomainCheck, check_domain
from engine.email.spoken import ParsedAddress, parse_spoken_address
from tests.fixtures.dns_server import RunningDns, Zone, dns_server

ZONE = {
    ("mail.example", "MX"): ["20 backup.mail.example.", "10 mx1.mail.example."],
    ("mx1.mail.example", "A"): ["127.0.0.1"],
    ("a-only.example", "A"): ["127.0.0.2"],
    ("v6-only.example", "AAAA"): ["::1"],
    ("txt-only.example", "TXT"): ['"no mail here"'],
    ("null-mx.example", "MX"): ["0 ."],
    ("gmail.com", "MX"): ["5 gmail-smtp-in.l.google.com."],
    ("xn--bcher-kva.example", "MX"): ["10 mx.xn--bcher-kva.example."],
}


@pytest.fixture
async def dns() -> AsyncIterator[RunningDns]:
    zone = Zone(ZONE, servfail=frozenset({"broken.example"}), silent=frozenset({"slow.example"}))
    async with dns_server(zone) as running:
        yield running


async def check(dns: RunningDns, domain: str, timeout_s: float = 2.0) -> DomainCheck:
    return await check_domain(domain, nameservers=dns.nameservers, port=dns.port, timeout_s=timeout_s)


async def test_mx_records_make_the_domain_valid_with_hosts_by_preference(dns: RunningDns) -> None:
    result = await check(dns, "mail.example")
    assert (result.status, result.hosts) == ("valid", ("mx1.mail.example", "backup.mail.example"))
    assert result.usable and "MX" in result.reason
    assert dns.zone.queries == [("mail.example", "MX")]


@pytest.mark.parametrize(("domain", "rdtype"), [("a-only.example", "A"), ("v6-only.example", "AAAA")])
async def test_an_address_without_mx_is_the_implicit_mx_of_rfc_5321(dns: RunningDns, domain: str, rdtype: str) -> None:
    result = await check(dns, domain)
    assert (result.status, result.hosts) == ("valid", (domain,))
    assert rdtype in result.reason
    assert dns.zone.queries[0] == (domain, "MX")
    assert dns.zone.queries[-1] == (domain, rdtype)


async def test_a_domain_that_does_not_exist_is_invalid_after_one_question(dns: RunningDns) -> None:
    result = await check(dns, "nothing.example")
    assert result.status == "invalid" and not result.usable
    assert "does not exist" in result.reason
    assert dns.zone.queries == [("nothing.example", "MX")]


async def test_a_domain_with_neither_mx_nor_address_is_invalid(dns: RunningDns) -> None:
    result = await check(dns, "txt-only.example")
    assert result.status == "invalid"
    assert "no mail server and no address" in result.reason
    assert [t for _, t in dns.zone.queries] == ["MX", "A", "AAAA"]


async def test_a_null_mx_says_the_domain_takes_no_mail(dns: RunningDns) -> None:
    result = await check(dns, "null-mx.example")
    assert result.status == "invalid" and "null MX" in result.reason


async def test_a_server_that_never_answers_is_unknown_not_invalid(dns: RunningDns) -> None:
    result = await check(dns, "slow.example", timeout_s=0.3)
    assert result.status == "unknown" and result.usable
    assert "timed out" in result.reason
    assert ("slow.example", "MX") in dns.zone.queries  # the question did reach our silent server


async def test_servfail_is_a_temporary_failure_so_unknown(dns: RunningDns) -> None:
    result = await check(dns, "broken.example")
    assert result.status == "unknown" and result.usable
    assert "no server could answer" in result.reason


async def test_no_dns_server_listening_is_unknown() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    result = await check_domain("mail.example", nameservers=["127.0.0.1"], port=port, timeout_s=0.5)
    assert result.status == "unknown"


@pytest.mark.parametrize("domain", ["", "com", "a..b.example", "x" * 64 + ".example"])
async def test_names_that_cannot_be_domains_are_invalid_without_asking_dns(dns: RunningDns, domain: str) -> None:
    result = await check(dns, domain)
    assert result.status == "invalid"
    assert dns.zone.queries == []


async def test_names_are_case_insensitive_and_a_final_dot_is_fine(dns: RunningDns) -> None:
    assert (await check(dns, "Mail.Example.")).status == "valid"


async def test_an_internationalised_domain_is_asked_for_in_its_ascii_form(dns: RunningDns) -> None:
    result = await check(dns, "bücher.example")
    assert (result.status, result.hosts) == ("valid", ("mx.xn--bcher-kva.example",))
    assert dns.zone.queries == [("xn--bcher-kva.example", "MX")]


async def test_a_timeout_that_is_not_positive_or_an_empty_list_of_nameservers_is_refused() -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        await check_domain("mail.example", nameservers=["127.0.0.1"], timeout_s=0)
    with pytest.raises(ValueError, match="nameservers is empty"):
        await check_domain("mail.example", nameservers=[])


async def test_a_spoken_address_is_parsed_then_its_domain_checked(dns: RunningDns) -> None:
    parsed = parse_spoken_address("J O H N dot smith at gmail com")
    assert isinstance(parsed, ParsedAddress)
    result = await check(dns, parsed.domain)
    assert (result.domain, result.status) == ("gmail.com", "valid")
