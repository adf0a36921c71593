"""An installation without an image reader, as one without the ``ocr`` extra is, named
in ``Settings.readers`` (``ingest/extra_readers.py``)."""

LACKING = (".png",)
