"""Calls: the call manager (start, turns, end), a call's runtime, usage metering, capacity (max calls, drain) and
turn timing. Realtime calls have their own package, ``engine.realtime``."""
