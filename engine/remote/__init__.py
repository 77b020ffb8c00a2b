"""Clients for a console attached to engines elsewhere (Redis store or one engine's HTTP API); see ``base``."""
