"""The engine's HTTP API: app factory (``build_app``), the server component (``HttpServer``) and its guard.

``HttpBackend`` is what the API needs from the engine; ``HttpBindError`` is raised when it cannot listen.
"""

from engine.http.app import build_app, ready_state
from engine.http.backend import HttpBackend
from engine.http.server import HttpBindError, HttpServer

__all__ = ["HttpBackend", "HttpBindError", "HttpServer", "build_app", "ready_state"]
