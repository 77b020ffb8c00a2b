"""Clients for a console attached to engines elsewhere (Redis store or one engine's HTTP API); see ``base``.

``open_remote(url)`` is the one place a URL picks its client: ``redis://`` / ``rediss://`` → ``RedisEngines``
(every engine sharing that store), ``http://`` / ``https://`` → ``HttpEngines`` (one engine's HTTP API). Each
client is imported only when its scheme is asked for.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from engine.remote.base import RemoteEngines


def open_remote(url: str, **options: Any) -> RemoteEngines:
    """The client for ``url`` (not connected yet: call ``connect()``); ``options`` go to its constructor (e.g.
    ``token=`` for HTTP). ``ValueError`` naming the problem for a URL no client takes."""
    from engine.config.models.scale_out import check_store_url, safe_store_url

    try:
        scheme = urlsplit(url).scheme
    except ValueError as e:
        raise ValueError(f"--attach: not a URL ({e})") from None
    if scheme in ("redis", "rediss"):
        try:
            check_store_url(url)
        except ValueError as e:
            raise ValueError(f"--attach {safe_store_url(url)}: {e}") from None
        from engine.remote.redis_client import RedisEngines

        return RedisEngines(url, **options)
    if scheme in ("http", "https"):
        from engine.remote.http_client import HttpEngines

        return HttpEngines(url, **options)
    raise ValueError(
        f"--attach {safe_store_url(url) if '@' in url else url}: scheme {scheme or 'none'!r} is not supported; use "
        "redis://[user:password@]host:port/db, rediss:// (TLS), or http(s)://host:port for one engine's HTTP API"
    )
