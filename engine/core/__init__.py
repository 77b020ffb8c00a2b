"""The engine's shared infrastructure, below every feature: the task group, backoff, metrics, logging, statistics,
templates, child processes. Nothing here knows about calls, tools or providers."""
