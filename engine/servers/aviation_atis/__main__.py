"""Entry point: ``python -m engine.servers.aviation_atis [--http PORT] [--metar-file FILE] ...``."""

from engine.servers.aviation_atis.server import main

main()
