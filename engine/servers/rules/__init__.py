"""Rules MCP server package: ranked search over the project's own tabletop rules corpus."""
