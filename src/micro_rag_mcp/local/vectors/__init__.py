"""The vectors of the local index: the FAISS store saved to one file (``store``), the
queries on it (``queries``), its HNSW graph (``graph``) and the copy a process keeps in
memory for the catalog it reads (``cache``)."""
