"""Reusable console widgets; they render state and post messages, and never do I/O."""
