"""Entry point: ``python -m engine.servers.file_io --root DIR [--http PORT] [--max-bytes N]``."""

from engine.servers.file_io.server import main

main()
