"""Reading a file back from the local index: its indexed text, a range or a page of it,
or an anchor's passage (``search.reading``), from a catalog reader of its own."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from micro_rag_mcp.core.errors import IndexUnreadable, NotIndexed
from micro_rag_mcp.core.fsutil import lock_is_held
from micro_rag_mcp.core.results import TextPassage
from micro_rag_mcp.core.shown import shown
from micro_rag_mcp.local.answers.state import AnswerParts
from micro_rag_mcp.local.catalog import Catalog, CatalogCorrupt
from micro_rag_mcp.search.reading import DEFAULT_MAX_CHARS, read_indexed


class Reader:
    """The ``read`` of one index."""

    def __init__(self, parts: AnswerParts, rebuild: Callable[[], None] = lambda: None) -> None:
        self.settings = parts.settings
        self.paths = parts.paths
        self._writer = parts.writer
        self._rebuild = rebuild  # the index was deleted under this server (see Searcher)

    def read(
        self,
        path: str,
        *,
        char_start: int | None = None,
        char_end: int | None = None,
        page: int | None = None,
        max_chars: int = DEFAULT_MAX_CHARS,
        anchor: str | None = None,
    ) -> TextPassage:
        """The indexed text of one file, a range or page of it, or an anchor's passage
        (see ``reading``)."""
        indexing = self._writer.running or lock_is_held(self.paths.lock)
        try:
            catalog = Catalog.open_reader(self.paths.catalog)
        except CatalogCorrupt as e:
            if self._writer.wrote:
                if not self._writer.running:
                    self._rebuild()
                raise NotIndexed(
                    f"the index in {self.paths.folder} was deleted while the server ran: it is "
                    "being rebuilt from the folder, read again in a moment"
                ) from e
            raise NotIndexed(
                f"no file {shown(path)} in the index: nothing is indexed yet"
                + (" (indexing is running)" if indexing else "")
            ) from e
        try:
            return read_indexed(
                catalog,
                self.settings.data_folder,
                path,
                char_start=char_start,
                char_end=char_end,
                page=page,
                max_chars=max_chars,
                indexing=indexing,
                anchor=anchor,
                exts=self.settings.exts,
            )
        except sqlite3.DatabaseError as e:
            raise IndexUnreadable(f"the index cannot be read right now ({e}); try again") from e
        finally:
            catalog.close()
