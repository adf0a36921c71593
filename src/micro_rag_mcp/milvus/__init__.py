"""The Milvus backend: rows, collections, keywords, search, sync, shards, its engine."""
