"""The passes that write the local index: one pass at a time (``writer``), what it
decides per file (``indexer``), the reading and embedding beside each other
(``pipeline``) and how far they are (``tally``)."""
