"""HTTP for the text providers: one aiohttp session per call, retries with backoff, SSE and NDJSON readers.

Every REST provider needs the same things: POST a JSON body with its own auth headers, retry 429 and 5xx with
exponential backoff (honouring ``Retry-After``), turn 4xx into a ``ProviderError`` carrying the provider's own
message (with any credential scrubbed), and read a streamed body as Server-Sent Events (OpenAI, Anthropic,
Gemini) or newline-delimited JSON (Ollama). Cancelling the task that awaits a request closes its connection
(``async with`` on the response), so apply-now never leaves a request half-read.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import aiohttp

from engine.core.backoff import Backoff
from engine.providers.base import ProviderError

log = logging.getLogger(__name__)
T = TypeVar("T")
RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504, 529})


@dataclass(frozen=True, slots=True)
class HttpSettings:
    timeout_s: float
    max_retries: int
    backoff_s: float = 0.5
    max_backoff_s: float = 20.0
    max_retry_after_s: float = 60.0


def retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta seconds or an HTTP date)."""
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def error_message(body: str) -> str:
    """The provider's own error message from an error body (OpenAI, Anthropic, Gemini, Ollama shapes)."""
    try:
        data = json.loads(body)
    except ValueError:
        return body.strip()[:500] or "no error message"
    if isinstance(data, list) and data:  # Gemini sometimes wraps the error in a list
        data = data[0]
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, str):
            return err
        if isinstance(err, dict):
            msg = err.get("message") or err.get("error")
            if isinstance(msg, str):
                kind = err.get("type") or err.get("status")
                return f"{msg} ({kind})" if isinstance(kind, str) and kind not in msg else msg
        if isinstance(data.get("message"), str):
            return str(data["message"])
        detail = data.get("detail")  # ElevenLabs: {"detail": "…"} or {"detail": {"status": …, "message": …}}
        if isinstance(detail, str):
            return detail
        if isinstance(detail, dict) and isinstance(detail.get("message"), str):
            kind = detail.get("status")
            return f"{detail['message']} ({kind})" if isinstance(kind, str) else str(detail["message"])
    return body.strip()[:500]


class HttpClient:
    """The HTTP side of one provider session (one aiohttp ClientSession, closed with the call)."""

    def __init__(self, provider: str, settings: HttpSettings, secrets: tuple[str, ...] = ()) -> None:
        self.provider = provider
        self.settings = settings
        self.secrets = tuple(s for s in secrets if s)
        self._session: aiohttp.ClientSession | None = None

    def _scrub(self, text: str) -> str:
        for s in self.secrets:
            text = text.replace(s, "***")
        return text

    def _client(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            t = self.settings.timeout_s
            self._session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=t, sock_connect=min(10.0, t)))
        return self._session

    async def aclose(self) -> None:
        if self._session is not None and not self._session.closed:
            await self._session.close()
        self._session = None

    def _delay(self, attempt: int, header: str | None) -> float:
        after = retry_after(header)
        if after is not None:
            return min(after, self.settings.max_retry_after_s)
        return Backoff(self.settings.backoff_s, self.settings.max_backoff_s).delay_s(attempt)

    async def post(
        self,
        url: str,
        payload: Mapping[str, Any],
        headers: Mapping[str, str],
        read: Callable[[aiohttp.ClientResponse], Awaitable[T]],
    ) -> T:
        """POST ``payload``; on 2xx hand the open response to ``read``; retry 429/5xx and connection errors."""
        return await self.request("POST", url, payload, headers, read)

    async def request(
        self,
        method: str,
        url: str,
        payload: Mapping[str, Any] | None,
        headers: Mapping[str, str],
        read: Callable[[aiohttp.ClientResponse], Awaitable[T]],
    ) -> T:
        """``method`` with a JSON ``payload`` (None: no body); retries and errors as ``post``."""
        attempt = 0
        while True:
            try:
                data = None if payload is None else dict(payload)
                async with self._client().request(method, url, json=data, headers=dict(headers)) as resp:
                    if resp.status < 300:
                        return await read(resp)
                    body = await resp.text()
                    message = self._scrub(error_message(body))
                    if resp.status in RETRY_STATUS and attempt < self.settings.max_retries:
                        delay = self._delay(attempt, resp.headers.get("Retry-After"))
                        log.info(
                            "%s: HTTP %s (%s); retry %d in %.2fs",
                            self.provider,
                            resp.status,
                            message,
                            attempt + 1,
                            delay,
                        )
                    else:
                        raise ProviderError(self.provider, f"HTTP {resp.status}: {message}", resp.status)
            except (TimeoutError, aiohttp.ClientConnectionError) as e:
                if attempt >= self.settings.max_retries:
                    kind = "timed out" if isinstance(e, asyncio.TimeoutError) else f"connection failed: {e}"
                    raise ProviderError(self.provider, self._scrub(f"request to {url} {kind}")) from e
                delay = self._delay(attempt, None)
                log.info("%s: %s; retry %d in %.2fs", self.provider, type(e).__name__, attempt + 1, delay)
            await asyncio.sleep(delay)
            attempt += 1


async def sse_events(resp: aiohttp.ClientResponse) -> AsyncIterator[tuple[str, str]]:
    """(event, data) pairs of a Server-Sent Events body; ``event`` is "message" when the stream names none."""
    event, data = "", list[str]()
    async for raw in resp.content:
        line = raw.decode("utf-8").rstrip("\r\n")
        if not line:
            if data:
                yield event or "message", "\n".join(data)
            event, data = "", list[str]()
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if field == "event":
            event = value
        elif field == "data":
            data.append(value)
    if data:
        yield event or "message", "\n".join(data)


async def ndjson_lines(resp: aiohttp.ClientResponse) -> AsyncIterator[dict[str, Any]]:
    async for raw in resp.content:
        line = raw.decode("utf-8").strip()
        if line:
            obj = json.loads(line)
            if isinstance(obj, dict):
                yield obj


def loads_object(text: str, where: str) -> dict[str, Any]:
    try:
        obj = json.loads(text)
    except ValueError as e:
        raise ValueError(f"{where}: not JSON ({e}): {text[:200]!r}") from e
    if not isinstance(obj, dict):
        raise ValueError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    return obj
