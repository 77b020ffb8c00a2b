"""Aviation ATIS MCP server package: METAR parser, ICAO phraseology, METAR sources, aerodrome extras."""
