"""The `micro-rag` command line."""
