"""The engine's HTTP API: app factory (``build_app``), the server component (``HttpServer``) and its guard.

``HttpBackend`` is what the composition root hands the API (a record made of the engine's parts);
``HttpBindError`` is raised when it cannot listen.
"""

from engine.http.app import build_app, ready_state
from engine.http.backend import HealthSection, HttpBackend, Lifecycle
from engine.http.server import HttpBindError, HttpServer

__all__ = ["HealthSection", "HttpBackend", "HttpBindError", "HttpServer", "Lifecycle", "build_app", "ready_state"]
