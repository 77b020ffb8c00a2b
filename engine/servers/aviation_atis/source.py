"""Where METARs come from: the met.no tafmetar service (cached, refreshed) or a local file.

Why it exists: the ATIS tool must answer fast and must be polite to met.no. The network source caches each
station (default 300 s, or the response's ``Expires``), revalidates with ``If-Modified-Since`` (a 304 keeps
the cached text), refreshes airports in use in the background so calls rarely wait, and refuses to fetch
without the identifying User-Agent met.no's terms require. The file source serves a file of METAR lines
(latest per station wins) for offline use and the demo.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import formatdate, parsedate_to_datetime
from pathlib import Path
from typing import Protocol

import aiohttp

from engine.servers.aviation_atis.metar import MetarError, is_newer, observation_key, parse_metar

DEFAULT_BASE_URL = "https://api.met.no/weatherapi/tafmetar/1.0"
log = logging.getLogger(__name__)


class SourceError(Exception):
    """The METAR could not be obtained; the message says why (never includes secrets)."""


@dataclass
class Fetched:
    raw: str
    source: str
    stale: bool = False


class MetarSource(Protocol):
    name: str

    async def latest(self, icao: str) -> Fetched: ...


def latest_for(icao: str, text: str) -> str | None:
    """The newest METAR line for ``icao`` in ``text`` (one report per line, ``=`` terminators allowed)."""
    best: str | None = None
    best_key: tuple[int, int, int] | None = None
    for line in text.splitlines():
        line = line.strip().rstrip("=").strip()
        words = line.split()
        if words and words[0] in ("METAR", "SPECI"):
            words = words[1:]
        if words and words[0] == "COR":
            words = words[1:]
        if not words or words[0].upper() != icao:
            continue
        try:
            key = observation_key(parse_metar(line))
        except MetarError:
            continue
        if best_key is None or is_newer(key, best_key):
            best, best_key = line, key
    return best


class FileSource:
    """METARs from a local text file, re-read when the file changes."""

    name = "file"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._mtime: float | None = None
        self._text = ""
        self._load()

    def _load(self) -> None:
        try:
            mtime = self.path.stat().st_mtime
            if mtime != self._mtime:
                self._text = self.path.read_text(encoding="utf-8")
                self._mtime = mtime
        except OSError as exc:
            raise SourceError(f"cannot read METAR file {self.path}: {exc.strerror or exc}") from exc

    async def latest(self, icao: str) -> Fetched:
        self._load()
        line = latest_for(icao, self._text)
        if line is None:
            raise SourceError(f"no METAR for {icao} in {self.path.name}")
        return Fetched(line, self.name)


@dataclass
class _Entry:
    text: str
    expires_at: float
    validator: str
    last_used: float


class TafMetarSource:
    """METARs from met.no's tafmetar service with caching, revalidation and background refresh."""

    name = "met.no"

    def __init__(
        self,
        base_url: str,
        user_agent: str | None,
        *,
        cache_seconds: float = 300.0,
        timeout_seconds: float = 3.0,
        in_use_seconds: float = 1800.0,
        refresh_ahead_seconds: float = 30.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.user_agent = (user_agent or "").strip()
        self.cache_seconds = cache_seconds
        self.timeout = aiohttp.ClientTimeout(total=timeout_seconds)
        self.in_use_seconds = in_use_seconds
        self.refresh_ahead_seconds = refresh_ahead_seconds
        self.clock = clock
        self._cache: dict[str, _Entry] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._session: aiohttp.ClientSession | None = None
        self.requests_sent = 0

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
            self._session = None

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self.timeout, headers={"User-Agent": self.user_agent})
        return self._session

    def _expiry(self, headers: Mapping[str, str], now: float) -> float:
        expires = headers.get("Expires")
        if expires:
            try:
                when = parsedate_to_datetime(str(expires)).timestamp()
            except (TypeError, ValueError):
                when = None
            if when is not None:
                # Honour the server's Expires, but never hammer it when its clock is behind ours.
                return max(when, now + 10.0)
        return now + self.cache_seconds

    async def latest(self, icao: str) -> Fetched:
        if not self.user_agent:
            raise SourceError(
                "refusing to fetch METARs from met.no without an identifying User-Agent: set "
                "AVA_ATIS_USER_AGENT (or --user-agent), e.g. 'my-app/1.0 me@example.com'"
            )
        now = self.clock()
        entry = self._cache.get(icao)
        if entry is not None and entry.expires_at > now:
            entry.last_used = now
            return Fetched(self._pick(icao, entry.text), self.name)
        try:
            entry = await self._fetch(icao)
        except SourceError:
            stale = self._cache.get(icao)
            if stale is None:
                raise
            stale.last_used = now
            log.warning("serving a stale METAR for %s after a failed refresh", icao)
            return Fetched(self._pick(icao, stale.text), self.name, stale=True)
        entry.last_used = now
        return Fetched(self._pick(icao, entry.text), self.name)

    @staticmethod
    def _pick(icao: str, text: str) -> str:
        line = latest_for(icao, text)
        if line is None:
            raise SourceError(f"met.no returned no METAR for {icao}")
        return line

    async def _fetch(self, icao: str) -> _Entry:
        lock = self._locks.setdefault(icao, asyncio.Lock())
        async with lock:
            now = self.clock()
            cached = self._cache.get(icao)
            if cached is not None and cached.expires_at > now:
                return cached  # another caller refreshed it while we waited
            headers = {"If-Modified-Since": cached.validator} if cached is not None else {}
            url = f"{self.base_url}/metar.txt"
            self.requests_sent += 1
            try:
                async with self._client().get(url, params={"icao": icao}, headers=headers) as response:
                    body = await response.text()
                    status = response.status
                    response_headers = response.headers
            except (aiohttp.ClientError, TimeoutError) as exc:
                reason = type(exc).__name__
                raise SourceError(f"could not reach the METAR service for {icao}: {reason}") from exc
            now = self.clock()
            expires_at = self._expiry(response_headers, now)
            if status == 304 and cached is not None:
                cached.expires_at = expires_at
                return cached
            if status != 200:
                raise SourceError(f"the METAR service answered HTTP {status} for {icao}")
            if not body.strip():
                raise SourceError(f"met.no returned no METAR for {icao}")
            validator = response_headers.get("Last-Modified") or formatdate(now, usegmt=True)
            entry = _Entry(body, expires_at, validator, now)
            self._cache[icao] = entry
            return entry

    async def refresh_due(self) -> list[str]:
        """Refresh stations used recently whose cache expires soon; return the ones refreshed."""
        now = self.clock()
        due = [
            icao
            for icao, entry in self._cache.items()
            if now - entry.last_used <= self.in_use_seconds and entry.expires_at - now <= self.refresh_ahead_seconds
        ]
        refreshed: list[str] = []
        for icao in due:
            entry = self._cache[icao]
            entry.expires_at = min(entry.expires_at, now)  # force revalidation
            try:
                await self._fetch(icao)
                refreshed.append(icao)
            except SourceError as exc:
                log.warning("background refresh of %s failed: %s", icao, exc)
        return refreshed

    async def run_refresher(self, interval_seconds: float) -> None:
        """Call :meth:`refresh_due` every ``interval_seconds`` until cancelled."""
        while True:
            await asyncio.sleep(interval_seconds)
            with contextlib.suppress(Exception):
                await self.refresh_due()
