"""The engine's HTTP API: app factory (``build_app``) and the server component (``HttpServer``)."""

from engine.http.app import build_app, ready_state
from engine.http.server import HttpServer

__all__ = ["HttpServer", "build_app", "ready_state"]
