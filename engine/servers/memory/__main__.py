"""Entry point: ``python -m engine.servers.memory [--http PORT] [--db PATH]``."""

from engine.servers.memory.server import main

main()
