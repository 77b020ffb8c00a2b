"""The composition root hands the HTTP API a record made of the parts (issue 35 item 1): the named /health sections
and the doors' routes are fixed when the engine is built, and nothing in the record is the engine."""

from __future__ import annotations

from aiohttp.test_utils import TestClient, TestServer

from engine.app import Engine
from engine.config.models import Settings
from engine.http import HttpServer, build_app


def _engine(serve: bool) -> Engine:
    settings = Settings.model_validate({"engine": {"http": {"port": 0}}, "recording": {"enabled": False}})
    return Engine(settings, serve_http=serve)


def test_a_serving_engine_hands_its_server_the_sections_and_routes_of_its_doors() -> None:
    engine = _engine(serve=True)
    backend = engine.http_backend()
    assert isinstance(engine.components[0], HttpServer) and engine.components[0].backend is backend
    assert [s.name for s in backend.health] == ["capacity", "store", "control", "shared_book"]
    owners = [getattr(install, "__self__", None) for install in backend.routes]
    assert [getattr(o, "name", None) for o in owners] == ["approvals_http", "capacity", "remote_http", "mcp_endpoint"]
    assert engine not in [getattr(f, "__self__", None) for f in vars(backend).values()]
    assert all(c.name != "capacity" for c in engine.components)  # routes and a section only: nothing to start


async def test_health_of_an_engine_not_serving_has_its_components_sections() -> None:
    engine = _engine(serve=False)
    backend = engine.http_backend()
    assert [s.name for s in backend.health] == ["store", "control", "shared_book"]
    async with engine, TestClient(TestServer(build_app(backend))) as client:
        r = await client.get("/health")
        body = await r.json()
    assert list(body) == ["status", "started", "store", "control", "shared_book"] and body["started"] is True
