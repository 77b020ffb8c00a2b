"""Entry point: ``python -m engine.servers.dice [--http PORT] [--seed N] [--tables FILE]``."""

from engine.servers.dice.server import main

main()
