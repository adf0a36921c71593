"""Retrieval benchmarks for micro-rag-mcp (not shipped; run from a clone)."""
