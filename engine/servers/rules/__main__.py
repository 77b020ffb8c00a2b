"""Entry point: ``python -m engine.servers.rules [--http PORT] [--rules-dir DIR]``."""

from engine.servers.rules.server import main

main()
