"""What the local engine answers without writing: a search over both channels
(``search``, the keyword channel ``keywords``) from pooled catalog readers
(``reader_pool``), a read, the index's state (``answers``), the listing of its files
(``listing``) and the summary of its folder (``status``)."""
