"""What the local engine answers without writing: a search over both channels
(``searcher``, its ranking ``search`` and keyword channel ``keywords``) from pooled
catalog readers (``reader_pool``), a read (``reader``), the index's state (``state``),
the listing of its files (``listing``) and the summary of its folder (``status``)."""
