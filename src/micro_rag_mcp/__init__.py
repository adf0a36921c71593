"""micro-rag-mcp: local, offline document search for AI agents over MCP."""

__version__ = "0.2.0"
