"""The exceptions a caller can act on.

``MicroRagError`` is the base. The CLI turns these into a message and an exit status;
the server turns them into a ``ToolError`` the model can read.
"""


class MicroRagError(Exception):
    """Base of every error this package raises on purpose."""


class ConfigError(MicroRagError):
    """A command-line value or the data folder is unusable."""


class ReadError(MicroRagError):
    """A document could not be read or parsed; the message is the reason recorded for it.

    ``transient`` marks failures that say nothing about the file itself (an I/O error, a
    permission, a reader killed for time): the file is tried again at the next reindex.
    """

    def __init__(self, reason: str, *, transient: bool = False) -> None:
        super().__init__(reason)
        self.transient = transient


class ModelUnavailable(MicroRagError):
    """The embedding model's files are missing or do not match the expected checksum."""


class IndexBusy(MicroRagError):
    """Another reindex (in this process or another one) holds the index lock."""


class IndexWriteError(MicroRagError):
    """The index folder cannot be written (read-only, full, or gone)."""


class OtherSettings(IndexWriteError):
    """Another process re-made the index with other settings since this one wrote it:
    this one leaves the index to it (``passes.writer``)."""


class DataFolderGone(IndexWriteError):
    """The data folder is gone (deleted, moved, unmounted): nothing is indexed until it is
    back, and no index is made anew inside a folder that does not exist."""


class IndexUnreadable(MicroRagError):
    """The index cannot be read at this moment (for example, it is being rebuilt)."""


class NotIndexed(MicroRagError):
    """The file asked for is not in the index: outside the data folder, unknown, or failed."""


class PassageGone(MicroRagError):
    """An anchor's passage is no longer in its file (see ``anchors``)."""


class InvalidArgument(MicroRagError):
    """A tool argument is outside what the tool accepts."""


class Stopped(MicroRagError):
    """Work given up between two steps because the server is stopping or the caller left."""


class StoreUnavailable(MicroRagError):
    """A shared store (Milvus) cannot be reached, or refused a request."""


class StoreMismatch(MicroRagError):
    """A shared store holds an index made with another model or chunking."""
