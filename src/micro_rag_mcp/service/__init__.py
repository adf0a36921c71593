"""The user's shared service: every launch of ``micro-rag-mcp`` relays its session to one
process per user and installation, which shares engines and models between sessions."""
