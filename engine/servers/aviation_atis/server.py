"""The aviation ATIS MCP server: ``get_atis(icao, metar_raw?)``.

Why it exists: it gives a voice agent a realistic ATIS broadcast (ICAO phraseology) plus the decoded
METAR, from met.no's tafmetar service (cached, refreshed in the background) or from a local file of METAR
lines for offline use and the demo. Per-aerodrome extras come from a YAML file re-read on change.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

from mcp.server import MCPServer
from mcp.types import CallToolResult

from engine.servers.aviation_atis.aerodromes import AerodromeFileError, Aerodromes
from engine.servers.aviation_atis.metar import MetarError, parse_metar
from engine.servers.aviation_atis.phraseology import atis_text, spell
from engine.servers.aviation_atis.source import (
    DEFAULT_BASE_URL,
    FileSource,
    MetarSource,
    SourceError,
    TafMetarSource,
)
from engine.servers.common import (
    ASSETS_DIR,
    READ_ONLY,
    env_default,
    fail,
    failing,
    make_parser,
    make_server,
    serve,
    spoken_result,
    startup,
    tool_meta,
)

DEFAULT_AERODROMES = ASSETS_DIR / "aerodromes.yaml"


def _shipped_or_given(path: Path) -> Path:
    """A relative METAR file that is not there is looked up among the shipped assets (the demo's sample)."""
    if path.is_absolute() or path.exists():
        return path
    shipped = ASSETS_DIR / path.name
    return shipped if shipped.exists() else path


#: Declared latency: a METAR file answers in milliseconds; met.no is cached, with a bounded fetch on a miss.
_ATIS_META_FILE = tool_meta(
    estimated_ms=5, max_ms=300, idempotent=True, cacheable_seconds=60, probe_args={"icao": "LSZH"}
)
_ATIS_META = tool_meta(
    estimated_ms=300, max_ms=3500, idempotent=True, cacheable_seconds=60, probe_args={"icao": "LSZH"}
)


def build_server(
    args: argparse.Namespace, source: MetarSource, aerodromes: Aerodromes, refresh_interval: float
) -> MCPServer[Any]:
    @contextlib.asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        task: asyncio.Task[None] | None = None
        if isinstance(source, TafMetarSource) and refresh_interval > 0:
            task = asyncio.create_task(source.run_refresher(refresh_interval))
        try:
            yield None
        finally:
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            if isinstance(source, TafMetarSource):
                await source.close()

    server = make_server(
        "aviation_atis",
        "Gives the current ATIS for an aerodrome by ICAO code, in ICAO phraseology, with the decoded METAR.",
        args,
        lifespan=lifespan,
    )

    @server.tool(
        description=(
            "Get the current ATIS for an aerodrome (4-letter ICAO code such as LSZH, EGLL, KJFK) as spoken "
            "phraseology plus the decoded METAR. Optionally pass metar_raw to decode a given METAR instead."
        ),
        meta=_ATIS_META if isinstance(source, TafMetarSource) else _ATIS_META_FILE,
        annotations=READ_ONLY,
    )
    async def get_atis(icao: str, metar_raw: str | None = None) -> CallToolResult:
        code = icao.strip().upper()
        if not re.fullmatch(r"[A-Z]{4}", code):
            fail(f"{icao!r} is not an ICAO aerodrome code: expected 4 letters, like LSZH")
        extras = aerodromes.get(code)
        if extras.get("explicit_not_available"):
            fail(f"ATIS is not available for {extras.get('name') or spell(code)}.")
        stale = False
        if metar_raw is not None and metar_raw.strip():
            raw, origin = metar_raw, "argument"
        elif metar_raw is not None:
            fail("metar_raw is empty; leave it out to fetch the current METAR")
        else:
            with failing(SourceError):
                fetched = await source.latest(code)
            raw, origin, stale = fetched.raw, fetched.source, fetched.stale
        with failing(MetarError, doing=f"cannot read the METAR for {code}"):
            parsed = parse_metar(raw)
        if parsed["station"] != code:
            fail(f"the METAR given is for {parsed['station']}, not {code}")
        text = atis_text(parsed, extras)
        return spoken_result(
            text,
            {"icao": code, "atis_text": text, "metar": parsed, "aerodrome": extras, "source": origin, "stale": stale},
        )

    return server


def create(argv: Sequence[str] | None = None) -> MCPServer[Any]:
    """The ATIS server for this command line (``StartupError`` on a bad one)."""
    parser = make_parser("python -m engine.servers.aviation_atis", "ATIS from METARs MCP server.")
    parser.add_argument(
        "--metar-file",
        default=None,
        help="serve METARs from this file (latest per station) instead of met.no (env AVA_ATIS_METAR_FILE)",
    )
    parser.add_argument(
        "--base-url", default=None, help=f"tafmetar base URL (env AVA_ATIS_BASE_URL; default {DEFAULT_BASE_URL})"
    )
    parser.add_argument(
        "--user-agent", default=None, help="identifying User-Agent met.no requires (env AVA_ATIS_USER_AGENT)"
    )
    parser.add_argument(
        "--cache-seconds",
        type=float,
        default=300.0,
        help="cache lifetime when the response has no Expires (default 300)",
    )
    parser.add_argument(
        "--refresh-interval",
        type=float,
        default=60.0,
        help="seconds between background refreshes of airports in use (0 = off; default 60)",
    )
    parser.add_argument(
        "--aerodromes",
        default=None,
        help=f"aerodrome extras YAML (env AVA_ATIS_AERODROMES; default {DEFAULT_AERODROMES})",
    )
    args = parser.parse_args(list(argv or []))
    if args.cache_seconds <= 0:
        parser.error("--cache-seconds must be positive")
    if args.refresh_interval < 0:
        parser.error("--refresh-interval must be 0 (off) or positive")
    source: MetarSource
    metar_file = env_default(args.metar_file, "AVA_ATIS_METAR_FILE")
    with startup("aviation_atis", SourceError, AerodromeFileError):
        if metar_file:
            source = FileSource(_shipped_or_given(Path(metar_file)))
        else:
            source = TafMetarSource(
                env_default(args.base_url, "AVA_ATIS_BASE_URL", DEFAULT_BASE_URL) or DEFAULT_BASE_URL,
                env_default(args.user_agent, "AVA_ATIS_USER_AGENT"),
                cache_seconds=args.cache_seconds,
            )
        aerodromes_path = env_default(args.aerodromes, "AVA_ATIS_AERODROMES", str(DEFAULT_AERODROMES))
        aerodromes = Aerodromes(Path(aerodromes_path) if aerodromes_path else None)
    return build_server(args, source, aerodromes, args.refresh_interval)


def main(argv: list[str] | None = None) -> None:
    serve(create, argv)
