"""Dice MCP server package: notation parser, roller, spoken-form normalizer, random tables, server."""
