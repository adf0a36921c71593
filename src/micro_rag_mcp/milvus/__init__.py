"""The Milvus backend: its address and sharding, rows, collections, keywords, search, sync."""
