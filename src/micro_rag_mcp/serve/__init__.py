"""The MCP edge: the server, its tools and resources, the stdio transport, the entry point."""
