"""The local backend: SQLite catalog, FAISS vectors, the writer, its pipeline, the watcher."""
