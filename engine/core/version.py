"""The engine's version, in one place: the package face (``engine.__version__``) re-exports it, and the parts
that report it (the MCP endpoint's server info, the heartbeat) import it from here, never from the face."""

__version__ = "0.1.0"
