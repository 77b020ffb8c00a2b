"""File I/O MCP server package: read, write and list files inside one configured root directory."""
