"""ATIS server: the met.no source against a loopback imitation of tafmetar, and the server as a child."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from pathlib import Path

import pytest
from aiohttp import web
from mcp import Client
from mcp.types import CallToolResult

from engine.servers.aviation_atis.aerodromes import AerodromeFileError, Aerodromes
from engine.servers.aviation_atis.source import SourceError, TafMetarSource

REPO = Path(__file__).resolve().parents[3]
LSZH_OLD = "LSZH 121220Z 24006KT 9999 FEW045 16/08 Q1019="
LSZH_NEW = "LSZH 121250Z 24008KT 9999 FEW030 15/09 Q1013 NOSIG="
LSZH_NEWER = "LSZH 121320Z 25010KT 9999 SCT040 17/09 Q1012 NOSIG="


@dataclass
class FakeTafMetar:
    """Imitates GET /metar.txt?icao=XXXX: METAR lines, Last-Modified, Expires, 304 on If-Modified-Since."""

    bodies: dict[str, str] = field(default_factory=dict)
    last_modified: str = "Mon, 12 May 2025 12:50:00 GMT"
    expires: str | None = None
    status: int | None = None
    requests: list[dict[str, str]] = field(default_factory=list)

    async def handle(self, request: web.Request) -> web.Response:
        self.requests.append(
            {
                "icao": request.query.get("icao", ""),
                "ua": request.headers.get("User-Agent", ""),
                "ims": request.headers.get("If-Modified-Since", ""),
            }
        )
        headers = {"Last-Modified": self.last_modified}
        if self.expires:
            headers["Expires"] = self.expires
        if self.status is not None:
            return web.Response(status=self.status, text="error", headers=headers)
        if request.headers.get("If-Modified-Since") == self.last_modified:
            return web.Response(status=304, headers=headers)
        return web.Response(text=self.bodies.get(request.query.get("icao", ""), ""), headers=headers)


@pytest.fixture
async def fake() -> AsyncIterator[tuple[FakeTafMetar, str]]:
    state = FakeTafMetar(bodies={"LSZH": f"{LSZH_OLD}\n{LSZH_NEW}\n"})
    app = web.Application()
    app.router.add_get("/weatherapi/tafmetar/1.0/metar.txt", state.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield state, f"http://127.0.0.1:{port}/weatherapi/tafmetar/1.0"
    await runner.cleanup()


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


async def test_user_agent_is_required(fake: tuple[FakeTafMetar, str]) -> None:
    state, url = fake
    source = TafMetarSource(url, "  ")
    with pytest.raises(SourceError, match="without an identifying User-Agent: set AVA_ATIS_USER_AGENT"):
        await source.latest("LSZH")
    assert state.requests == []


async def test_cache_304_and_expires(fake: tuple[FakeTafMetar, str]) -> None:
    state, url = fake
    clock = Clock(1_000_000.0)
    source = TafMetarSource(url, "ava-test/1.0 test@example.com", cache_seconds=300, clock=clock)
    try:
        first = await source.latest("LSZH")
        assert first.raw == LSZH_NEW.rstrip("=") and first.source == "met.no"
        assert state.requests == [{"icao": "LSZH", "ua": "ava-test/1.0 test@example.com", "ims": ""}]
        clock.now += 299
        await source.latest("LSZH")
        assert len(state.requests) == 1  # served from cache
        clock.now += 2
        again = await source.latest("LSZH")  # expired: revalidated, 304 keeps the text
        assert again.raw == first.raw
        assert state.requests[-1]["ims"] == state.last_modified and len(state.requests) == 2
        # A new report: Last-Modified changes, so the server answers 200 with the new text.
        state.bodies["LSZH"] += LSZH_NEWER + "\n"
        state.last_modified = "Mon, 12 May 2025 13:20:00 GMT"
        state.expires = formatdate(clock.now + 301 + 60, usegmt=True)  # Expires wins over cache_seconds
        clock.now += 301
        newer = await source.latest("LSZH")
        assert newer.raw == LSZH_NEWER.rstrip("=")
        clock.now += 59
        await source.latest("LSZH")
        assert len(state.requests) == 3
        clock.now += 2
        await source.latest("LSZH")
        assert len(state.requests) == 4
    finally:
        await source.close()


async def test_background_refresh_and_stale_fallback(fake: tuple[FakeTafMetar, str]) -> None:
    state, url = fake
    clock = Clock(2_000_000.0)
    source = TafMetarSource(
        url, "ava-test/1.0", cache_seconds=100, refresh_ahead_seconds=30, in_use_seconds=600, clock=clock
    )
    try:
        await source.latest("LSZH")
        assert await source.refresh_due() == []  # not due yet
        clock.now += 75
        assert await source.refresh_due() == ["LSZH"]
        assert len(state.requests) == 2 and state.requests[-1]["ims"] == state.last_modified
        clock.now += 50
        await source.latest("LSZH")  # still fresh thanks to the refresh
        assert len(state.requests) == 2
        clock.now += 10_000  # no longer in use: not refreshed
        assert await source.refresh_due() == []
        state.status = 503
        stale = await source.latest("LSZH")
        assert stale.stale and stale.raw == LSZH_NEW.rstrip("=")
        with pytest.raises(SourceError, match="answered HTTP 503 for EGLL"):
            await source.latest("EGLL")
        state.status = None
        with pytest.raises(SourceError, match=r"met\.no returned no METAR for KJFK"):
            await source.latest("KJFK")
    finally:
        await source.close()


async def test_unreachable_service_error() -> None:
    source = TafMetarSource("http://127.0.0.1:9/nothing", "ava-test/1.0", timeout_seconds=2)
    try:
        with pytest.raises(SourceError, match="could not reach the METAR service for LSZH"):
            await source.latest("LSZH")
    finally:
        await source.close()


def test_aerodromes_file_reload_and_validation(tmp_path: Path) -> None:
    path = tmp_path / "a.yaml"
    path.write_text("aerodromes:\n  LSZH: {name: Zurich, runway_in_use: 14}\n")
    extras = Aerodromes(path)
    assert extras.get("LSZH") == {"name": "Zurich", "runway_in_use": "14"}
    path.write_text("aerodromes:\n  LSZH: {name: Zurich, runway_in_use: 28}\n")
    import os

    os.utime(path, (1, 1))
    assert extras.get("LSZH")["runway_in_use"] == "28"
    path.write_text("aerodromes:\n  LSZH: {colour: red}\n")
    os.utime(path, (2, 2))
    assert extras.get("LSZH")["runway_in_use"] == "28"  # a broken edit keeps the last good data
    with pytest.raises(AerodromeFileError, match="unknown keys"):
        Aerodromes(path)
    path.write_text("aerodromes:\n  ZZ: {}\n")
    with pytest.raises(AerodromeFileError, match="'ZZ' is not a 4-letter ICAO code"):
        Aerodromes(path)


async def test_atis_server_with_metar_file(
    spawn: Callable[..., Client], text: Callable[[CallToolResult], str], tmp_path: Path
) -> None:
    aerodromes = tmp_path / "aerodromes.yaml"
    shutil.copy(REPO / "assets" / "aerodromes.yaml", aerodromes)
    async with spawn(
        "aviation_atis", "--metar-file", "assets/metar_sample.txt", "--aerodromes", str(aerodromes)
    ) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        meta = tools["get_atis"].meta or {}
        assert meta["idempotent"] is True and meta["cacheable_seconds"] == 60
        assert meta["probe_args"] == {"icao": "LSZH"}

        result = await client.call_tool("get_atis", {"icao": "lszh"})
        assert not result.is_error, text(result)
        assert text(result).startswith("Zurich information, time one two five zero zulu. Runway in use one four.")
        data = result.structured_content or {}
        assert data["atis_text"] == text(result) == data["speech"]
        assert data["metar"]["qnh"] == {"hpa": 1013, "inhg": 29.91, "reported": "hPa"}
        assert data["source"] == "file"
        for icao in ("EGLL", "KJFK", "ENGM"):
            other = await client.call_tool("get_atis", {"icao": icao})
            assert not other.is_error and "information, time" in text(other)

        aerodromes.write_text(aerodromes.read_text().replace('runway_in_use: "14"', 'runway_in_use: "28"'))
        import os

        os.utime(aerodromes, (5, 5))
        changed = await client.call_tool("get_atis", {"icao": "LSZH"})
        assert "Runway in use two eight." in text(changed)

        given = await client.call_tool(
            "get_atis", {"icao": "EDDF", "metar_raw": "EDDF 121350Z 25010KT CAVOK 18/07 Q1021"}
        )
        assert not given.is_error and (given.structured_content or {})["source"] == "argument"

        errors = {
            ("LSZ", None): "'LSZ' is not an ICAO aerodrome code: expected 4 letters",
            ("LS1H", None): "is not an ICAO aerodrome code",
            ("LFPG", None): "no METAR for LFPG in metar_sample.txt",
            ("ESSA", None): "ATIS is not available for Arlanda",
            ("EDDF", "garbage"): "cannot read the METAR for EDDF: a METAR must start with a 4-letter ICAO",
            ("EDDF", "EDDF 121350Z NIL"): "NIL",
            ("EDDF", "LSZH 121250Z 24008KT 9999 Q1013"): "the METAR given is for LSZH, not EDDF",
            ("EDDF", "  "): "metar_raw is empty",
        }
        for (icao, raw), message in errors.items():
            args = {"icao": icao} if raw is None else {"icao": icao, "metar_raw": raw}
            bad = await client.call_tool("get_atis", args)
            assert bad.is_error, (icao, raw)
            assert message in text(bad), text(bad)


async def test_atis_server_over_network(
    spawn: Callable[..., Client], text: Callable[[CallToolResult], str], fake: tuple[FakeTafMetar, str]
) -> None:
    state, url = fake
    agent = ("--user-agent", "ava-test/1.0 ops@example.com")
    async with spawn("aviation_atis", "--base-url", url, "--refresh-interval", "0", *agent) as client:
        result = await client.call_tool("get_atis", {"icao": "LSZH"})
        assert not result.is_error, text(result)
        assert (result.structured_content or {})["source"] == "met.no"
        await client.call_tool("get_atis", {"icao": "LSZH"})
        assert len(state.requests) == 1 and state.requests[0]["ua"] == "ava-test/1.0 ops@example.com"
    async with spawn("aviation_atis", "--base-url", url) as client:
        refused = await client.call_tool("get_atis", {"icao": "LSZH"})
        assert refused.is_error and "AVA_ATIS_USER_AGENT" in text(refused)


async def test_atis_user_agent_from_the_environment(
    spawn_env: Callable[..., Client], text: Callable[[CallToolResult], str], fake: tuple[FakeTafMetar, str]
) -> None:
    state, url = fake
    env = {"AVA_ATIS_USER_AGENT": "ava-env/1.0 ops@example.com"}
    async with spawn_env("aviation_atis", "--base-url", url, "--refresh-interval", "0", env=env) as client:
        result = await client.call_tool("get_atis", {"icao": "LSZH"})
        assert not result.is_error, text(result)
        assert state.requests[-1]["ua"] == "ava-env/1.0 ops@example.com"
