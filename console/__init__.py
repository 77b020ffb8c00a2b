"""The operator console: a Textual app that runs the engine in-process and talks to it only via its API and events."""
